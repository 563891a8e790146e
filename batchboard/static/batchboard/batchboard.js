// batchboard's only script, served as a file so a strict Content-Security-Policy
// needs no 'unsafe-inline'. Polling elements carry no htmx trigger filter (htmx
// evaluates filters with eval, which the policy forbids; allowEval is off):
// this listener keeps hidden tabs from polling instead.
document.addEventListener("htmx:beforeRequest", (event) => {
  const trigger = event.detail.elt.getAttribute("hx-trigger") || "";
  if (trigger.startsWith("every ") && document.visibilityState !== "visible") {
    event.preventDefault();
  }
});

// A live region (the execution page's) is re-rendered whole on each refresh;
// the <details> a reader opened inside it stay open.
let openDetails = [];
document.addEventListener("htmx:beforeSwap", (event) => {
  const target = event.detail.target;
  if (target instanceof Element && target.classList.contains("bb-region")) {
    openDetails = Array.from(target.querySelectorAll("details[open][id]"), (el) => el.id);
  }
});
document.addEventListener("htmx:afterSwap", () => {
  for (const id of openDetails) {
    const details = document.getElementById(id);
    if (details instanceof HTMLDetailsElement) {
      details.open = true;
    }
  }
  openDetails = [];
});

// Keyboard: "/" focuses the id box, "j"/"k" move through a list's rows,
// Enter opens the chosen row, "?" shows the shortcuts dialog.
let currentRow = "";

function listRows() {
  return Array.from(document.querySelectorAll("#bb-rows > tr[id]")).filter(
    (row) => !row.classList.contains("bb-partitions-row") && row.querySelector("a[href]"),
  );
}

function choose(step) {
  const rows = listRows();
  if (!rows.length) {
    return;
  }
  const at = rows.findIndex((row) => row.id === currentRow);
  const next = at < 0 ? (step > 0 ? 0 : rows.length - 1) : Math.min(Math.max(at + step, 0), rows.length - 1);
  for (const row of document.querySelectorAll("tr.bb-current")) {
    row.classList.remove("bb-current");
  }
  const row = rows[next];
  row.classList.add("bb-current");
  row.scrollIntoView({ block: "nearest" });
  currentRow = row.id;
}

document.addEventListener("htmx:afterSwap", () => {
  // Polled rows are replaced: mark the chosen one again.
  const row = currentRow && document.getElementById(currentRow);
  if (row) {
    row.classList.add("bb-current");
  }
});

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) {
    return;
  }
  const target = event.target;
  if (target instanceof Element && target.closest("input, textarea, select, [contenteditable], dialog[open]")) {
    return;
  }
  if (event.key === "/") {
    const box = document.getElementById("bb-jump-id");
    if (box) {
      event.preventDefault();
      box.focus();
      box.select();
    }
  } else if (event.key === "j" || event.key === "k") {
    event.preventDefault();
    choose(event.key === "j" ? 1 : -1);
  } else if (event.key === "Enter" && currentRow) {
    if (target instanceof Element && target.closest("a, button")) {
      return;
    }
    const link = document.getElementById(currentRow)?.querySelector("a[href]");
    if (link) {
      event.preventDefault();
      window.location.assign(link.href);
    }
  } else if (event.key === "?") {
    const dialog = document.getElementById("bb-shortcuts");
    if (dialog instanceof HTMLDialogElement && !dialog.open) {
      event.preventDefault();
      // Closed, the dialog hands the keys back to the list, not to its button.
      dialog.addEventListener("close", () => document.activeElement?.blur(), { once: true });
      dialog.showModal();
    }
  }
});

// A region loaded after its page (the overview's attention panel) says so
// when its request fails, instead of promising forever that it is loading.
function regionFailed(event) {
  const region = event.detail.elt;
  const message = region instanceof Element && region.getAttribute("data-bb-failed");
  const pending = message && region.querySelector("[data-bb-pending]");
  if (pending) {
    pending.textContent = message;
    pending.classList.add("bb-attention-text");
    region.removeAttribute("aria-busy");
  }
}
document.addEventListener("htmx:responseError", regionFailed);
document.addEventListener("htmx:sendError", regionFailed);

// The signed-out page: drop htmx's history snapshots and its remembered path,
// should the browser have ignored the sign-out's Clear-Site-Data header.
if (document.querySelector("[data-bb-signed-out]")) {
  try {
    sessionStorage.removeItem("htmx-history-cache");
    sessionStorage.removeItem("htmx-current-path-for-history");
  } catch {
    // Storage disabled: nothing was kept.
  }
}

// Copy buttons ([data-bb-copy] names the element whose text is copied, such
// as a CLI command): one listener for the page, so buttons a refresh brings
// in work too. Without the clipboard (a page not served over HTTPS), the
// text is selected for the reader to copy.
document.addEventListener("click", (event) => {
  const target = event.target;
  const button = target instanceof Element ? target.closest("button[data-bb-copy]") : null;
  if (!(button instanceof HTMLButtonElement)) {
    return;
  }
  const source = document.getElementById(button.dataset.bbCopy || "");
  if (!source) {
    return;
  }
  const label = button.dataset.bbLabel || button.textContent;
  button.dataset.bbLabel = label;
  const done = (text) => {
    button.textContent = text;
    window.setTimeout(() => {
      button.textContent = label;
    }, 2000);
  };
  const select = () => {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    if (selection) {
      selection.removeAllRanges();
      selection.addRange(range);
    }
    done(button.dataset.bbCopyFailed || label);
  };
  if (!navigator.clipboard) {
    select();
    return;
  }
  navigator.clipboard.writeText(source.textContent || "").then(() => done(button.dataset.bbCopied || label), select);
});

// The header's unread-alerts count is loaded after the page, so a page's own
// statements stay its own. A data attribute, not hx-get: the page's first
// hx-get stays the list's continuation.
document.addEventListener("DOMContentLoaded", () => {
  const count = document.querySelector("[data-bb-inbox-count]");
  if (count instanceof HTMLElement && window.htmx) {
    window.htmx.ajax("GET", count.dataset.bbInboxCount, { target: count, swap: "innerHTML" });
  }
});

// The header's saved views load when their menu is first opened, so a page's
// own statements stay its own.
document.addEventListener(
  "toggle",
  (event) => {
    const menu = event.target;
    if (!(menu instanceof HTMLDetailsElement) || !menu.open || !menu.classList.contains("bb-views-menu")) {
      return;
    }
    const body = menu.querySelector("[data-bb-views-menu]");
    if (body instanceof HTMLElement && !body.dataset.bbLoaded && window.htmx) {
      body.dataset.bbLoaded = "true";
      window.htmx.ajax("GET", body.dataset.bbViewsMenu, { target: body, swap: "innerHTML" });
    }
  },
  true,
);

// Times in the browser's zone, when the reader chose it: each <time> keeps its
// UTC value in datetime= and title=, and its text is rewritten from datetime=
// on load and after every swap. Days (a date alone) stay UTC days.
function twoDigits(number) {
  return String(number).padStart(2, "0");
}

function localTimes(root) {
  const meta = document.querySelector('meta[name="bb-time-zone"]');
  if (!meta || meta.getAttribute("content") !== "browser" || !(root instanceof Element || root instanceof Document)) {
    return;
  }
  const zoneName = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" });
  for (const element of root.querySelectorAll("time[datetime]")) {
    const value = element.getAttribute("datetime") || "";
    if (!value.includes("T")) {
      continue;
    }
    const moment = new Date(value);
    if (Number.isNaN(moment.getTime())) {
      continue;
    }
    const zone = zoneName.formatToParts(moment).find((part) => part.type === "timeZoneName");
    element.textContent =
      `${moment.getFullYear()}-${twoDigits(moment.getMonth() + 1)}-${twoDigits(moment.getDate())} ` +
      `${twoDigits(moment.getHours())}:${twoDigits(moment.getMinutes())}:${twoDigits(moment.getSeconds())}` +
      (zone ? ` ${zone.value}` : "");
  }
}
document.addEventListener("DOMContentLoaded", () => localTimes(document));
document.addEventListener("htmx:afterSettle", () => localTimes(document));
