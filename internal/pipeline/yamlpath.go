package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ErrYAMLPathNotFound is wrapped by SetYAMLScalar's error when no document of the file has
// the path.
var ErrYAMLPathNotFound = errors.New("yamlPath not found")

// pathNotFound says where a path stops; it is an ErrYAMLPathNotFound.
type pathNotFound string

func (e pathNotFound) Error() string        { return string(e) }
func (e pathNotFound) Is(target error) bool { return target == ErrYAMLPathNotFound }

func notFound(format string, args ...any) error { return pathNotFound(fmt.Sprintf(format, args...)) }

// yamlStep is one step of a YAML path: a mapping's key, a sequence's index, or the item of a
// sequence of mappings whose key selKey holds selValue.
type yamlStep struct {
	key      string
	index    int // -1: not an index step
	selKey   string
	selValue string
}

func (s yamlStep) String() string {
	switch {
	case s.key != "":
		return s.key
	case s.index >= 0:
		return "[" + strconv.Itoa(s.index) + "]"
	}
	return "[" + s.selKey + "=" + s.selValue + "]"
}

// parseYAMLPath parses keys separated by dots, each optionally followed by [N] or [key=value]
// (the syntax the Pipeline API admits for pullRequest.yamlPath).
func parseYAMLPath(path string) ([]yamlStep, error) {
	var steps []yamlStep
	i := 0
	isKeyChar := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	for {
		start := i
		for i < len(path) && isKeyChar(path[i]) {
			i++
		}
		if i == start {
			return nil, fmt.Errorf("yamlPath %q: a key is expected at offset %d", path, start)
		}
		steps = append(steps, yamlStep{key: path[start:i], index: -1})
		for i < len(path) && path[i] == '[' {
			end := strings.IndexByte(path[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("yamlPath %q: [ without ]", path)
			}
			inner := path[i+1 : i+end]
			i += end + 1
			if n, err := strconv.Atoi(inner); err == nil && n >= 0 && inner != "" && strings.Trim(inner, "0123456789") == "" {
				steps = append(steps, yamlStep{index: n})
				continue
			}
			k, v, ok := strings.Cut(inner, "=")
			if !ok || k == "" || v == "" || strings.IndexFunc(k, func(r rune) bool { return r > 127 || !isKeyChar(byte(r)) }) >= 0 {
				return nil, fmt.Errorf("yamlPath %q: [%s] is neither [index] nor [key=value]", path, inner)
			}
			steps = append(steps, yamlStep{index: -1, selKey: k, selValue: v})
		}
		if i == len(path) {
			return steps, nil
		}
		if path[i] != '.' {
			return nil, fmt.Errorf("yamlPath %q: unexpected %q at offset %d", path, path[i], i)
		}
		i++
	}
}

// lookupYAML follows steps from a document's root node; it returns the node reached and
// whether a flow collection ({...} or [...]) encloses it, or an error saying where the path
// stops.
func lookupYAML(doc *yaml.Node, steps []yamlStep) (*yaml.Node, bool, error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, false, notFound("the document is empty")
	}
	n := doc.Content[0]
	inFlow := false
	var walked []string
	where := func() string {
		if len(walked) == 0 {
			return "the document's root"
		}
		return strings.Join(walked, "")
	}
	for _, s := range steps {
		if n.Kind == yaml.AliasNode {
			return nil, false, fmt.Errorf("%s is an alias (*%s): set the value at its anchor instead", where(), n.Value)
		}
		if n.Style&yaml.FlowStyle != 0 {
			inFlow = true
		}
		var next *yaml.Node
		switch {
		case s.key != "":
			if n.Kind != yaml.MappingNode {
				return nil, false, notFound("%s is not a mapping (no key %q)", where(), s.key)
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Kind == yaml.ScalarNode && n.Content[i].Value == s.key {
					next = n.Content[i+1]
					break
				}
			}
			if next == nil {
				return nil, false, notFound("%s has no key %q", where(), s.key)
			}
			if len(walked) > 0 {
				walked = append(walked, ".")
			}
		case s.index >= 0:
			if n.Kind != yaml.SequenceNode {
				return nil, false, notFound("%s is not a sequence (no item %d)", where(), s.index)
			}
			if s.index >= len(n.Content) {
				return nil, false, notFound("%s has %d items, no item %d", where(), len(n.Content), s.index)
			}
			next = n.Content[s.index]
		default:
			if n.Kind != yaml.SequenceNode {
				return nil, false, notFound("%s is not a sequence (no item with %s=%s)", where(), s.selKey, s.selValue)
			}
			for _, item := range n.Content {
				if item.Kind != yaml.MappingNode {
					continue
				}
				for i := 0; i+1 < len(item.Content); i += 2 {
					if item.Content[i].Value == s.selKey && item.Content[i+1].Kind == yaml.ScalarNode && item.Content[i+1].Value == s.selValue {
						next = item
						break
					}
				}
				if next != nil {
					break
				}
			}
			if next == nil {
				return nil, false, notFound("%s has no item with %s=%s", where(), s.selKey, s.selValue)
			}
		}
		walked = append(walked, s.String())
		n = next
	}
	if n.Style&yaml.FlowStyle != 0 {
		inFlow = true
	}
	return n, inFlow, nil
}

// parseYAMLDocuments parses every document of content.
func parseYAMLDocuments(content []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(content))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parsing YAML: %w", err)
		}
		docs = append(docs, &doc)
	}
}

// findYAMLScalar finds the scalar at steps in the first document that has them; it returns
// the document's index too.
func findYAMLScalar(docs []*yaml.Node, path string, steps []yamlStep) (*yaml.Node, bool, int, error) {
	var firstErr error
	for i, doc := range docs {
		n, inFlow, err := lookupYAML(doc, steps)
		if err == nil {
			if n.Kind == yaml.AliasNode {
				return nil, false, 0, fmt.Errorf("yamlPath %s is an alias (*%s, line %d): set the value at its anchor instead", path, n.Value, n.Line)
			}
			if n.Kind != yaml.ScalarNode {
				return nil, false, 0, fmt.Errorf("yamlPath %s is not a scalar (line %d)", path, n.Line)
			}
			return n, inFlow, i, nil
		}
		if !errors.Is(err, ErrYAMLPathNotFound) {
			return nil, false, 0, fmt.Errorf("yamlPath %s: %w", path, err)
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	switch {
	case len(docs) == 0:
		return nil, false, 0, notFound("yamlPath %s not found: the file holds no YAML document", path)
	case len(docs) == 1:
		return nil, false, 0, fmt.Errorf("yamlPath %s not found: %w", path, firstErr)
	}
	return nil, false, 0, fmt.Errorf("yamlPath %s not found in any of the file's %d documents (in the first, %w)", path, len(docs), firstErr)
}

// SetYAMLScalar returns content with the scalar at path (the pullRequest strategy's yamlPath
// syntax) set to value, in the first YAML document that has the path. Every other byte is
// kept (comments, order, indentation, the scalar's quoting when the value allows it): the
// change is the value's text only. A value already there returns content unchanged. The
// scalar must sit on one line (not a block scalar | or >, not an alias).
func SetYAMLScalar(content []byte, path, value string) ([]byte, error) {
	steps, err := parseYAMLPath(path)
	if err != nil {
		return nil, err
	}
	docs, err := parseYAMLDocuments(content)
	if err != nil {
		return nil, err
	}
	n, inFlow, docIndex, err := findYAMLScalar(docs, path, steps)
	if err != nil {
		return nil, err
	}
	if n.Value == value {
		return content, nil
	}
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return nil, fmt.Errorf("yamlPath %s is a block scalar (| or >, line %d): only a one-line scalar can be set", path, n.Line)
	}
	start, end, err := scalarSpan(content, n, inFlow)
	if err != nil {
		return nil, fmt.Errorf("yamlPath %s (line %d): %w", path, n.Line, err)
	}

	// The scalar's own style when it holds the value as a string, else double quotes.
	var candidates []string
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		candidates = []string{strconv.Quote(value)}
	case n.Style&yaml.SingleQuotedStyle != 0:
		if strings.IndexFunc(value, func(r rune) bool { return r < 0x20 || r == 0x7f }) < 0 {
			candidates = append(candidates, "'"+strings.ReplaceAll(value, "'", "''")+"'")
		}
		candidates = append(candidates, strconv.Quote(value))
	default:
		candidates = []string{value, strconv.Quote(value)}
	}
	for _, text := range candidates {
		out := make([]byte, 0, len(content)+len(text))
		out = append(out, content[:start]...)
		out = append(out, text...)
		out = append(out, content[end:]...)
		if holdsValue(out, steps, docIndex, value, n) {
			return out, nil
		}
	}
	return nil, fmt.Errorf("yamlPath %s (line %d): %q cannot be written there as a YAML string", path, n.Line, value)
}

// holdsValue says whether content parses and its document docIndex has value at steps, with
// the original scalar's tag when it was written plain (a plain 1.2 that was a string stays a
// string).
func holdsValue(content []byte, steps []yamlStep, docIndex int, value string, orig *yaml.Node) bool {
	docs, err := parseYAMLDocuments(content)
	if err != nil || docIndex >= len(docs) {
		return false
	}
	n, _, err := lookupYAML(docs[docIndex], steps)
	if err != nil || n.Kind != yaml.ScalarNode || n.Value != value {
		return false
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 && n.ShortTag() != "!!str" && n.ShortTag() != orig.ShortTag() {
		return false
	}
	return true
}

// scalarSpan returns the byte offsets of n's text in content: from its first character (after
// any tag or anchor) to the end of its value, quotes included.
func scalarSpan(content []byte, n *yaml.Node, inFlow bool) (int, int, error) {
	// The line's offset, then the column (counted in characters by the parser).
	off := 0
	for line := 1; line < n.Line; line++ {
		i := bytes.IndexByte(content[off:], '\n')
		if i < 0 {
			return 0, 0, errors.New("the scalar's position is beyond the file")
		}
		off += i + 1
	}
	if off == 0 && bytes.HasPrefix(content, []byte("\xef\xbb\xbf")) {
		off = 3 // the parser does not count a byte order mark
	}
	for col := 1; col < n.Column; col++ {
		if off >= len(content) || content[off] == '\n' {
			return 0, 0, errors.New("the scalar's position is beyond its line")
		}
		_, size := utf8.DecodeRune(content[off:])
		off += size
	}
	// A tag (!!str) or an anchor (&a) before the value stays.
	for off < len(content) && (content[off] == '!' || content[off] == '&') {
		for off < len(content) && content[off] != ' ' && content[off] != '\t' && content[off] != '\n' {
			off++
		}
		for off < len(content) && (content[off] == ' ' || content[off] == '\t') {
			off++
		}
	}
	start := off
	end := -1
	switch {
	case off < len(content) && content[off] == '"':
		for i := off + 1; i < len(content); i++ {
			if content[i] == '\\' {
				i++
				continue
			}
			if content[i] == '\n' {
				return 0, 0, errors.New("the quoted scalar spans lines: only a one-line scalar can be set")
			}
			if content[i] == '"' {
				end = i + 1
				break
			}
		}
	case off < len(content) && content[off] == '\'':
		for i := off + 1; i < len(content); i++ {
			if content[i] == '\n' {
				return 0, 0, errors.New("the quoted scalar spans lines: only a one-line scalar can be set")
			}
			if content[i] == '\'' {
				if i+1 < len(content) && content[i+1] == '\'' {
					i++
					continue
				}
				end = i + 1
				break
			}
		}
	default:
		i := off
		for ; i < len(content); i++ {
			c := content[i]
			if c == '\n' || c == '\r' || (c == '#' && i > off && (content[i-1] == ' ' || content[i-1] == '\t')) ||
				(inFlow && (c == ',' || c == ']' || c == '}')) {
				break
			}
		}
		for i > off && (content[i-1] == ' ' || content[i-1] == '\t') {
			i--
		}
		end = i
	}
	if end < 0 {
		return 0, 0, errors.New("the scalar's end was not found")
	}
	// The text found must read back as the scalar (a plain scalar spanning lines does not).
	var got yaml.Node
	if err := yaml.Unmarshal(content[start:end], &got); err != nil || len(got.Content) != 1 || got.Content[0].Value != n.Value {
		return 0, 0, errors.New("the scalar spans lines or could not be delimited: only a one-line scalar can be set")
	}
	return start, end, nil
}
