package updateservice

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Risk is an UpgradeRisk ready to match edges, or a risk the update service declared itself
// (Detected).
type Risk struct {
	// Namespace and Object name the UpgradeRisk ("" for a detected risk's Object).
	Namespace, Object string
	// Stream limits the risk to one stream of Namespace; "" is every stream there.
	Stream string
	// Name, Message, URL and Rules are what clusters are served.
	Name, Message, URL string
	Rules              []v1alpha1.MatchingRule
	// FixedIn is the first version without the problem, for readers.
	FixedIn string
	// Declared is when the risk was declared (the object's creation): a feeder that promoted a
	// payload before then is not undone by it.
	Declared time.Time
	// Detected marks a risk the update service found in the stream's own results.
	Detected bool

	toExact string         // To when it is a version
	to      *regexp.Regexp // To when it is a pattern
	from    *regexp.Regexp // nil: every version
}

// Blocks says whether the risk removes its edges for every cluster: it has no matching rules.
func (r *Risk) Blocks() bool { return len(r.Rules) == 0 }

// AppliesToAll says whether every cluster is exposed: no rules, or a first rule of type
// Always. Such a risk keeps feeders from promoting a payload it leads into.
func (r *Risk) AppliesToAll() bool {
	return len(r.Rules) == 0 || r.Rules[0].Type == v1alpha1.MatchingRuleAlways
}

// Key identifies the risk among those of one answer: namespace/object, or for a detected
// risk its stream, name and edge.
func (r *Risk) Key() string {
	if r.Detected {
		from := ""
		if r.from != nil {
			from = r.from.String()
		}
		return r.Namespace + "/" + r.Stream + "/" + r.Name + "/" + r.toExact + "/" + from
	}
	return r.Namespace + "/" + r.Object
}

// Into says whether the risk leads into version to of stream namespace/stream.
func (r *Risk) Into(namespace, stream, to string) bool {
	if namespace != r.Namespace || (r.Stream != "" && r.Stream != stream) {
		return false
	}
	if r.to == nil {
		return to == r.toExact
	}
	return r.to.MatchString(to)
}

// On says whether the risk applies to the edge from → to of stream namespace/stream.
func (r *Risk) On(namespace, stream, from, to string) bool {
	return r.Into(namespace, stream, to) && (r.from == nil || r.from.MatchString(from))
}

// Compile reads an UpgradeRisk. Admission already refused patterns that are not anchored or
// do not compile; an object that still has one (stored before its CRD said so) is an error.
func Compile(u *v1alpha1.UpgradeRisk) (Risk, error) {
	r := Risk{
		Namespace: u.Namespace, Object: u.Name, Stream: u.Spec.Stream,
		Name: u.Spec.Name, Message: u.Spec.Message, URL: u.Spec.URL,
		Rules: u.Spec.MatchingRules, FixedIn: u.Spec.FixedIn, Declared: u.CreationTimestamp.Time,
	}
	if strings.HasPrefix(u.Spec.To, "^") {
		re, err := regexp.Compile(u.Spec.To)
		if err != nil {
			return Risk{}, err
		}
		if lit, complete := re.LiteralPrefix(); complete {
			r.toExact = lit
		} else {
			r.to = re
		}
	} else {
		r.toExact = u.Spec.To
	}
	if u.Spec.From != "" && u.Spec.From != "^.*$" {
		re, err := regexp.Compile(u.Spec.From)
		if err != nil {
			return Risk{}, err
		}
		r.from = re
	}
	return r, nil
}

// Index finds the risks of a set quickly: those naming an exact version by a map, the
// patterns by their literal prefix.
type Index struct {
	exact    map[string][]*Risk
	patterns []*Risk
	prefixes []string // patterns[i]'s literal prefix
	all      []*Risk
}

// NewIndex indexes risks, ordered by namespace, stream, name and object so that answers
// list them the same way each time.
func NewIndex(risks []Risk) *Index {
	x := &Index{exact: map[string][]*Risk{}}
	sorted := make([]*Risk, len(risks))
	for i := range risks {
		sorted[i] = &risks[i]
	}
	slices.SortFunc(sorted, func(a, b *Risk) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Stream, b.Stream),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Object, b.Object))
	})
	x.all = sorted
	for _, r := range sorted {
		if r.to == nil {
			x.exact[r.toExact] = append(x.exact[r.toExact], r)
			continue
		}
		prefix, _ := r.to.LiteralPrefix()
		x.patterns = append(x.patterns, r)
		x.prefixes = append(x.prefixes, prefix)
	}
	return x
}

// All is every risk indexed, in the index's order.
func (x *Index) All() []*Risk {
	if x == nil {
		return nil
	}
	return x.all
}

// Into returns the risks leading into version to of stream namespace/stream, in the index's
// order (exact versions first, then patterns).
func (x *Index) Into(namespace, stream, to string) []*Risk {
	if x == nil {
		return nil
	}
	var out []*Risk
	for _, r := range x.exact[to] {
		if r.Into(namespace, stream, to) {
			out = append(out, r)
		}
	}
	for i, r := range x.patterns {
		if strings.HasPrefix(to, x.prefixes[i]) && r.Into(namespace, stream, to) {
			out = append(out, r)
		}
	}
	return out
}

// On returns the risks on the edge from → to of stream namespace/stream.
func (x *Index) On(namespace, stream, from, to string) []*Risk {
	into := x.Into(namespace, stream, to)
	out := into[:0:0]
	for _, r := range into {
		if r.from == nil || r.from.MatchString(from) {
			out = append(out, r)
		}
	}
	return out
}
