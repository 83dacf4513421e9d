package jira

// CommentBody is the comment the controller leaves, for the tests of package jira_test.
var CommentBody = commentBody
