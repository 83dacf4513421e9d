package releaselog

import "context"

// TypePromotion is the type of the entries pipelines write for their promotions.
const TypePromotion = "promotion"

// TypeFreeze is the type of the entries written when a release freeze starts or ends.
const TypeFreeze = "freeze"

// AddControllerEntry adds an entry the controller writes itself (a pipeline's promotion, a
// freeze's start or end), whatever the configured allowlist of types says, as it does for its
// verdicts. It reports whether the entry was added: false when its day held its id already
// (no error then).
func (w *Writer) AddControllerEntry(ctx context.Context, e Entry) (bool, error) {
	_, added, err := w.add(ctx, e)
	return added, err
}
