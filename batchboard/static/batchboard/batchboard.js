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
