package changelog

import (
	"bytes"

	"github.com/yuin/goldmark"
)

// HTML renders the changelog's Markdown as an HTML fragment, as OpenShift's release
// controller does for the changeLog of its release info. Raw HTML in commit text is never
// passed through: Markdown escapes it and the renderer drops any that is left.
func (c *ChangeLog) HTML() ([]byte, error) {
	var buf bytes.Buffer
	if err := goldmark.Convert([]byte(c.Markdown()), &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
