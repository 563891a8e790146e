// batchboard's only script, served as a file so a strict Content-Security-Policy
// needs no 'unsafe-inline'. Polling elements also carry the trigger filter
// [document.visibilityState === 'visible'], which htmx evaluates with eval; under
// a CSP without 'unsafe-eval' htmx treats that filter as true, so this listener
// keeps hidden tabs from polling either way.
document.addEventListener("htmx:beforeRequest", (event) => {
  const trigger = event.detail.elt.getAttribute("hx-trigger") || "";
  if (trigger.startsWith("every ") && document.visibilityState !== "visible") {
    event.preventDefault();
  }
});
