// The pages' script: copy buttons, and live updates. The server sends a page's parts rendered
// anew as server-sent events whenever they change; this swaps them in without a reload and
// marks the table rows that are new. The pages are complete without it.
"use strict";

(() => {
  const live = document.getElementById("live");
  const say = (text) => {
    if (live) {
      live.textContent = text;
    }
  };

  // Copy buttons are hidden until this script can make them work.
  const copy = async (button) => {
    const target = document.getElementById(button.dataset.copy);
    if (!target) {
      return;
    }
    const text = target.textContent.trim();
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // No clipboard API (a page not served over https): select the text for the user.
      const range = document.createRange();
      range.selectNodeContents(target);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      document.execCommand("copy");
    }
    button.textContent = "Copied";
    say("Copied " + text);
    setTimeout(() => { button.textContent = "Copy"; }, 2000);
  };
  const showCopyButtons = () => {
    for (const button of document.querySelectorAll("button.copy[hidden]")) {
      button.hidden = false;
    }
  };
  showCopyButtons();
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button.copy");
    if (button) {
      copy(button);
    }
  });

  const main = document.querySelector("main[data-events]");
  if (!main || !("EventSource" in window)) {
    return;
  }
  // Rows with a data-key that a part did not hold before an update are marked new.
  const rowKeys = (element) => new Set(Array.from(element.querySelectorAll("tr[data-key]"), (tr) => tr.dataset.key));
  const source = new EventSource(main.dataset.events);
  source.addEventListener("update", (event) => {
    const update = JSON.parse(event.data);
    let changed = 0;
    let announce = "";
    for (const part of update.parts) {
      const element = document.getElementById(part.id);
      if (!element || element.dataset.version === part.version) {
        continue;
      }
      const before = rowKeys(element);
      element.innerHTML = part.html;
      element.dataset.version = part.version;
      for (const tr of element.querySelectorAll("tr[data-key]")) {
        if (!before.has(tr.dataset.key)) {
          tr.classList.add("new");
        }
      }
      announce = announce || part.announce || "";
      changed++;
    }
    if (changed > 0) {
      showCopyButtons();
      // Screen readers announce the status region.
      say(announce || "Updated");
    }
  });
  source.addEventListener("gone", (event) => {
    source.close();
    const message = JSON.parse(event.data).message;
    const banner = document.createElement("p");
    banner.className = "banner notice";
    banner.setAttribute("role", "alert");
    banner.textContent = message + " Reload the page.";
    main.prepend(banner);
  });
})();
