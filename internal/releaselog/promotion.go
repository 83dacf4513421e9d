package releaselog

import "context"

// TypePromotion is the type of the entries pipelines write for their promotions.
const TypePromotion = "promotion"

// AddControllerEntry adds an entry the controller writes itself (a pipeline's promotion),
// whatever the configured allowlist of types says, as it does for its verdicts. It reports
// whether the entry was added: false when its day held its id already (no error then).
func (w *Writer) AddControllerEntry(ctx context.Context, e Entry) (bool, error) {
	_, added, err := w.add(ctx, e)
	return added, err
}
