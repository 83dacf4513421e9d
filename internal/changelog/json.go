package changelog

import (
	"encoding/json"
	"time"
)

// JSONChangeLog is the OpenShift release-controller's ChangeLog JSON (as produced by
// `oc adm release info --changelog --output=json`):
//
//	{
//	  "from": {"name", "created", "digest", "promotedFrom"?},
//	  "to":   {"name", "created", "digest", "promotedFrom"?},
//	  "components"?: [...],          // component versions; not produced here
//	  "newImages"?, "removedImages"?, "rebuiltImages"?, "updatedImages"?: [{
//	    "name", "path",               // path: the repository's web URL (or the source URL)
//	    "shortCommit"?, "commit"?,    // the revision in "to" (in "from" for removed images)
//	    "imageRef"?,                  // the image digest (sha256:…)
//	    "fullChangeLog"?,             // compare URL for GitHub/GitLab-like sources
//	    "commits"?: [{
//	      "bugs"?: {id: url},         // never filled: Bugzilla is not consulted
//	      "issues"?: {"ABC-123": url},// url is "" unless an issue URL prefix is configured
//	      "subject"?, "pullID"?, "pullURL"?,
//	      "commitID"?,                // the first 8 characters of the sha, as oc
//	      "commitURL"?, "commitDate"
//	    }]
//	  }]
//	}
//
// Extensions beyond OSRC, in its camelCase style, all optional: on an image "source" (the
// git URL), "fromCommit", "fromImageRef", "mergeBase", "forcePushed", "truncated", "note"
// and "error"; on a commit "sha" (full), "author" and "merge".
type JSONChangeLog struct {
	From          JSONRelease     `json:"from"`
	To            JSONRelease     `json:"to"`
	Components    []JSONComponent `json:"components,omitempty"`
	NewImages     []JSONImage     `json:"newImages,omitempty"`
	RemovedImages []JSONImage     `json:"removedImages,omitempty"`
	RebuiltImages []JSONImage     `json:"rebuiltImages,omitempty"`
	UpdatedImages []JSONImage     `json:"updatedImages,omitempty"`
}

// JSONRelease is ChangeLogReleaseInfo.
type JSONRelease struct {
	Name         string    `json:"name"`
	Created      time.Time `json:"created"`
	Digest       string    `json:"digest"`
	PromotedFrom string    `json:"promotedFrom,omitempty"`
}

// JSONComponent is ChangeLogComponentInfo (component versions such as Kubernetes); kept for
// the shape, not filled by this package.
type JSONComponent struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	VersionURL string `json:"versionUrl,omitempty"`
	From       string `json:"from,omitempty"`
	FromURL    string `json:"fromUrl,omitempty"`
	DiffURL    string `json:"diffUrl,omitempty"`
}

// JSONImage is ChangeLogImageInfo plus extensions.
type JSONImage struct {
	Name          string       `json:"name"`
	Path          string       `json:"path"`
	ShortCommit   string       `json:"shortCommit,omitempty"`
	Commit        string       `json:"commit,omitempty"`
	ImageRef      string       `json:"imageRef,omitempty"`
	Commits       []JSONCommit `json:"commits,omitempty"`
	FullChangeLog string       `json:"fullChangeLog,omitempty"`

	Source       string `json:"source,omitempty"`
	FromCommit   string `json:"fromCommit,omitempty"`
	FromImageRef string `json:"fromImageRef,omitempty"`
	MergeBase    string `json:"mergeBase,omitempty"`
	ForcePushed  bool   `json:"forcePushed,omitempty"`
	Truncated    bool   `json:"truncated,omitempty"`
	Note         string `json:"note,omitempty"`
	Error        string `json:"error,omitempty"`
}

// JSONCommit is CommitInfo plus extensions.
type JSONCommit struct {
	Bugs       map[string]string `json:"bugs,omitempty"`
	Issues     map[string]string `json:"issues,omitempty"`
	Subject    string            `json:"subject,omitempty"`
	PullID     int               `json:"pullID,omitempty"`
	PullURL    string            `json:"pullURL,omitempty"`
	CommitID   string            `json:"commitID,omitempty"`
	CommitURL  string            `json:"commitURL,omitempty"`
	CommitDate time.Time         `json:"commitDate"`

	SHA    string `json:"sha,omitempty"`
	Author string `json:"author,omitempty"`
	Merge  bool   `json:"merge,omitempty"`
}

// JSON converts the changelog to the OSRC shape.
func (c *ChangeLog) JSON() JSONChangeLog {
	rel := func(r ReleaseInfo) JSONRelease {
		return JSONRelease(r)
	}
	images := func(ics []ImageChange) []JSONImage {
		var out []JSONImage
		for _, ic := range ics {
			out = append(out, c.jsonImage(ic))
		}
		return out
	}
	return JSONChangeLog{
		From: rel(c.From), To: rel(c.To),
		NewImages: images(c.NewImages), RemovedImages: images(c.RemovedImages),
		RebuiltImages: images(c.RebuiltImages), UpdatedImages: images(c.UpdatedImages),
	}
}

// MarshalJSON marshals the OSRC shape (JSONChangeLog).
func (c *ChangeLog) MarshalJSON() ([]byte, error) { return json.Marshal(c.JSON()) }

func (c *ChangeLog) issueURL(key string) string {
	if c.IssueURLPrefix == "" {
		return ""
	}
	return c.IssueURLPrefix + key
}

func (c *ChangeLog) jsonImage(ic ImageChange) JSONImage {
	web, ok := ParseWebRepo(ic.Source)
	out := JSONImage{
		Name: ic.Name, Path: ic.Source, Commit: ic.Revision, ShortCommit: short(ic.Revision),
		Source: ic.Source, FromCommit: ic.FromRevision, MergeBase: ic.MergeBase,
		ForcePushed: ic.ForcePushed, Truncated: ic.Truncated, Note: ic.Note, Error: ic.Error,
	}
	if ok {
		out.Path = web.base
	}
	if ic.Image != "" {
		out.ImageRef = imageDigest(ic.Image)
	}
	if ic.FromImage != "" {
		out.FromImageRef = imageDigest(ic.FromImage)
	}
	if ok && ic.Revision != "" && ic.FromRevision != "" && ic.Revision != ic.FromRevision && ic.Error == "" {
		out.FullChangeLog = web.CompareURL(ic.FromRevision, ic.Revision)
	}
	for _, cm := range ic.Commits {
		jc := JSONCommit{
			Subject: cm.Title, PullID: cm.PullRequest, PullURL: cm.PullURL,
			CommitID: short(cm.SHA), CommitURL: cm.URL, CommitDate: cm.Time.UTC(),
			SHA: cm.SHA, Author: cm.Author, Merge: cm.Merge,
		}
		if len(cm.Issues) > 0 {
			jc.Issues = map[string]string{}
			for _, k := range cm.Issues {
				jc.Issues[k] = c.issueURL(k)
			}
		}
		out.Commits = append(out.Commits, jc)
	}
	return out
}
