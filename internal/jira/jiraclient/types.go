package jiraclient

import "encoding/json"

// Issue is what the client reads of a Jira issue: its key, status and comments.
type Issue struct {
	ID     string      `json:"id"`
	Key    string      `json:"key"`
	Self   string      `json:"self,omitempty"`
	Fields IssueFields `json:"fields"`
}

// IssueFields are the fields the client asks for (status, comment).
type IssueFields struct {
	Status  *Status   `json:"status,omitempty"`
	Comment *Comments `json:"comment,omitempty"`
}

// StatusName is the issue's status name, "" when the status was not returned.
func (i *Issue) StatusName() string {
	if i.Fields.Status == nil {
		return ""
	}
	return i.Fields.Status.Name
}

// CommentBodies are the bodies of the issue's comments, oldest first.
func (i *Issue) CommentBodies() []string {
	if i.Fields.Comment == nil {
		return nil
	}
	out := make([]string, 0, len(i.Fields.Comment.Comments))
	for _, c := range i.Fields.Comment.Comments {
		out = append(out, c.Body)
	}
	return out
}

// Status is an issue status.
type Status struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	Self string `json:"self,omitempty"`
}

// Comments is a page of an issue's comments, as the comment field and the comment resource
// return them.
type Comments struct {
	Comments   []Comment `json:"comments"`
	StartAt    int       `json:"startAt"`
	MaxResults int       `json:"maxResults"`
	Total      int       `json:"total"`
}

// Comment is one comment of an issue.
type Comment struct {
	ID      string `json:"id,omitempty"`
	Self    string `json:"self,omitempty"`
	Body    string `json:"body"`
	Author  *User  `json:"author,omitempty"`
	Created string `json:"created,omitempty"`
	Updated string `json:"updated,omitempty"`
}

// User is a comment's author.
type User struct {
	Name         string `json:"name,omitempty"`
	AccountID    string `json:"accountId,omitempty"`
	DisplayName  string `json:"displayName,omitempty"`
	EmailAddress string `json:"emailAddress,omitempty"`
}

// Transition is a workflow transition available from an issue's current status.
type Transition struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	To   Status `json:"to"`
}

// TransitionsResponse is the answer of GET /rest/api/2/issue/{key}/transitions.
type TransitionsResponse struct {
	Expand      string       `json:"expand,omitempty"`
	Transitions []Transition `json:"transitions"`
}

// SearchRequest is the body of POST /rest/api/2/search.
type SearchRequest struct {
	JQL        string   `json:"jql"`
	StartAt    int      `json:"startAt"`
	MaxResults int      `json:"maxResults"`
	Fields     []string `json:"fields,omitempty"`
}

// SearchResult is a page of a JQL search.
type SearchResult struct {
	Expand     string  `json:"expand,omitempty"`
	StartAt    int     `json:"startAt"`
	MaxResults int     `json:"maxResults"`
	Total      int     `json:"total"`
	Issues     []Issue `json:"issues"`
}

// TransitionRequest is the body of POST /rest/api/2/issue/{key}/transitions.
type TransitionRequest struct {
	Transition TransitionRef `json:"transition"`
}

// TransitionRef names a transition by id.
type TransitionRef struct {
	ID string `json:"id"`
}

// CommentRequest is the body of POST /rest/api/2/issue/{key}/comment.
type CommentRequest struct {
	Body string `json:"body"`
}

// ErrorCollection is Jira's error body: messages, and errors by field.
type ErrorCollection struct {
	ErrorMessages []string          `json:"errorMessages"`
	Errors        map[string]string `json:"errors"`
}

// MarshalJSON writes both members always, as Jira does ("errors":{} when there are none).
func (e ErrorCollection) MarshalJSON() ([]byte, error) {
	msgs, errs := e.ErrorMessages, e.Errors
	if msgs == nil {
		msgs = []string{}
	}
	if errs == nil {
		errs = map[string]string{}
	}
	return json.Marshal(struct {
		ErrorMessages []string          `json:"errorMessages"`
		Errors        map[string]string `json:"errors"`
	}{msgs, errs})
}
