package releaselog

// verdict is what becomes of a queued entry in the next write of its day.
type verdict int

const (
	// verdictAdd: the entry goes into the write.
	verdictAdd verdict = iota
	// verdictPresent: the day holds the entry's id already, or an entry queued before it with
	// the same id goes into the write.
	verdictPresent
	// verdictFull: the day holds as many entries as it may.
	verdictFull
	// verdictTooLarge: the entry would take the day's object past its byte budget.
	verdictTooLarge
)

// dayState is what planWrite needs to know of a day's object as last read.
type dayState struct {
	// ids of its entries (those that have one).
	ids map[string]struct{}
	// count of its entries.
	count int
	// bytes is its serialized size.
	bytes int
}

// queued is an entry waiting for a write, as planWrite sees it.
type queued struct {
	id string
	// bytes the entry adds to the day's serialized object.
	bytes int
}

// dayLimits cap a day's object.
type dayLimits struct {
	maxEntries int
	maxBytes   int
}

// planWrite decides, in queue order, what becomes of each queued entry in one write of its
// day. An entry whose id the day holds, or which an earlier entry of the write brings, is
// present already whatever the caps say, so that repeating an add (after a restart, say) never
// fails. Any other entry goes in while the day stays within both caps; each entry is judged on
// its own, so a short entry still fits after a long one did not.
func planWrite(day dayState, entries []queued, limits dayLimits) []verdict {
	verdicts := make([]verdict, len(entries))
	count, bytes := day.count, day.bytes
	added := map[string]struct{}{}
	for i, e := range entries {
		_, held := day.ids[e.id]
		_, adding := added[e.id]
		switch {
		case e.id != "" && (held || adding):
			verdicts[i] = verdictPresent
		case count >= limits.maxEntries:
			verdicts[i] = verdictFull
		case bytes+e.bytes > limits.maxBytes:
			verdicts[i] = verdictTooLarge
		default:
			verdicts[i] = verdictAdd
			count++
			bytes += e.bytes
			if e.id != "" {
				added[e.id] = struct{}{}
			}
		}
	}
	return verdicts
}
