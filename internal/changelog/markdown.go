package changelog

import (
	"fmt"
	"strings"
)

// mdEscape neutralises characters that would turn commit text into markup or HTML.
var mdEscape = strings.NewReplacer("<", "&lt;", ">", "&gt;", "[", "\\[", "]", "\\]", "*", "\\*", "_", "\\_", "`", "\\`", "\n", " ")

// Markdown renders the changelog in the layout of `oc adm release info --changelog`: a header
// for the new release, "Changes from", new/removed/rebuilt images, then a section per updated
// component with one bullet per commit, linking commits and pull requests when the source is
// a GitHub/GitLab-like URL.
func (c *ChangeLog) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", c.To.Name)
	if !c.To.Created.IsZero() {
		fmt.Fprintf(&b, "Created: %s\n\n", c.To.Created.UTC())
	}
	if c.To.Digest != "" {
		fmt.Fprintf(&b, "Image Digest: `%s`\n\n", c.To.Digest)
	}
	if c.To.PromotedFrom != "" {
		fmt.Fprintf(&b, "Promoted from %s\n\n", c.To.PromotedFrom)
	}
	fmt.Fprintf(&b, "## Changes from %s\n\n", c.From.Name)

	section := func(title string, ics []ImageChange) {
		if len(ics) == 0 {
			return
		}
		fmt.Fprintf(&b, "### %s\n\n", title)
		for _, ic := range ics {
			b.WriteString("* " + imageLine(ic) + "\n")
		}
		b.WriteString("\n")
	}
	section("New images", c.NewImages)
	section("Removed images", c.RemovedImages)
	section("Rebuilt images without code change", c.RebuiltImages)

	for _, ic := range c.UpdatedImages {
		web, ok := ParseWebRepo(ic.Source)
		if ok && ic.Revision != "" {
			fmt.Fprintf(&b, "### [%s](%s)\n\n", ic.Name, web.TreeURL(ic.Revision))
		} else {
			fmt.Fprintf(&b, "### %s\n\n", ic.Name)
		}
		if ic.Error != "" {
			fmt.Fprintf(&b, "* Error: %s\n", mdEscape.Replace(ic.Error))
		}
		if ic.Note != "" {
			fmt.Fprintf(&b, "* Note: %s\n", mdEscape.Replace(ic.Note))
		}
		for _, cm := range ic.Commits {
			b.WriteString("* " + mdEscape.Replace(cm.Title))
			switch {
			case cm.PullRequest > 0 && cm.PullURL != "":
				fmt.Fprintf(&b, " [#%d](%s)", cm.PullRequest, cm.PullURL)
			case cm.PullRequest > 0:
				fmt.Fprintf(&b, " #%d", cm.PullRequest)
			}
			if cm.URL != "" {
				fmt.Fprintf(&b, " [%s](%s)", short(cm.SHA), cm.URL)
			} else {
				fmt.Fprintf(&b, " %s", short(cm.SHA))
			}
			for _, k := range cm.Issues {
				if u := c.issueURL(k); u != "" {
					fmt.Fprintf(&b, " [%s](%s)", k, u)
				} else {
					fmt.Fprintf(&b, " %s", k)
				}
			}
			b.WriteString("\n")
		}
		if ic.Truncated {
			b.WriteString("* … more commits not shown\n")
		}
		if ic.Error == "" && ic.FromRevision != "" && ic.Revision != "" {
			if ok {
				fmt.Fprintf(&b, "* [Full changelog](%s)\n", web.CompareURL(ic.FromRevision, ic.Revision))
			} else if ic.Source != "" {
				fmt.Fprintf(&b, "* %s from %s to %s\n", ic.Source, short(ic.FromRevision), short(ic.Revision))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func imageLine(ic ImageChange) string {
	name := ic.Name
	if web, ok := ParseWebRepo(ic.Source); ok {
		name = fmt.Sprintf("[%s](%s)", ic.Name, web.base)
		if ic.Revision != "" {
			name += fmt.Sprintf(" git [%s](%s)", short(ic.Revision), web.CommitURL(ic.Revision))
		}
	} else if ic.Revision != "" {
		name += " git " + short(ic.Revision)
	}
	if ic.Image != "" {
		name += fmt.Sprintf(" `%s`", imageDigest(ic.Image))
	}
	if ic.Note != "" {
		name += " (" + mdEscape.Replace(ic.Note) + ")"
	}
	return name
}
