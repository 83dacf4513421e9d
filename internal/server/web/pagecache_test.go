package web

import (
	"errors"
	"strconv"
	"testing"
)

// The cache keeps partCacheSize parts, the least recently used going first, and keeps no
// failed render.
func TestPartCacheKeepsTheRecentParts(t *testing.T) {
	c := newPartCache()
	renders := 0
	get := func(i int) string {
		t.Helper()
		v, err := cached(c, partKey{view: "stream", arg: strconv.Itoa(i)}, func() (string, error) {
			renders++
			return "part " + strconv.Itoa(i), nil
		})
		if err != nil || v != "part "+strconv.Itoa(i) {
			t.Fatalf("part %d: %q, %v", i, v, err)
		}
		return v
	}
	for i := range partCacheSize {
		get(i)
	}
	get(0)             // kept: 0 is now the most recent, 1 the least
	get(partCacheSize) // one more: 1 goes
	get(0)
	if renders != partCacheSize+1 {
		t.Fatalf("%d renders, want %d: a kept part was rendered again", renders, partCacheSize+1)
	}
	get(1)
	if renders != partCacheSize+2 {
		t.Fatalf("%d renders: the least recently used part was not the one dropped", renders)
	}

	failing := partKey{view: "stream", arg: "failing"}
	if _, err := cached(c, failing, func() (string, error) { return "", errors.New("boom") }); err == nil {
		t.Fatal("the render's error was lost")
	}
	if v, err := cached(c, failing, func() (string, error) { return "rendered", nil }); err != nil || v != "rendered" {
		t.Fatalf("after a failed render: %q, %v", v, err)
	}
}
