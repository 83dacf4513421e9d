// Live updates of the Releases page. The server sends the day's rendered navigation and
// entries as a server-sent event whenever they change; this swaps them in without a reload.
// The page is complete without it.
"use strict";

(() => {
  const main = document.querySelector("main[data-events]");
  if (!main || !("EventSource" in window)) {
    return;
  }
  const nav = document.getElementById("day-nav");
  const entries = document.getElementById("entries");
  const live = document.getElementById("live");

  // swap replaces a part when its version differs; untouched parts keep focus and selection.
  const swap = (element, part) => {
    if (element.dataset.version === part.version) {
      return false;
    }
    element.innerHTML = part.html;
    element.dataset.version = part.version;
    return true;
  };

  const rowKeys = () => new Set(Array.from(entries.querySelectorAll("tr[data-key]"), (tr) => tr.dataset.key));

  const source = new EventSource(main.dataset.events);
  source.addEventListener("day", (event) => {
    const update = JSON.parse(event.data);
    swap(nav, update.nav);
    const before = rowKeys();
    if (!swap(entries, update.entries)) {
      return;
    }
    for (const tr of entries.querySelectorAll("tr[data-key]")) {
      if (!before.has(tr.dataset.key)) {
        tr.classList.add("new");
      }
    }
    // Screen readers announce the status region.
    live.textContent = "Updated: " + update.summary;
  });
})();
