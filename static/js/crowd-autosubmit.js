// Crowd studies on MTurk (crowd/templates/crowd/done.html): submit the finished assignment to
// MTurk's externalSubmit at once; the button stays for browsers without JavaScript.
document.addEventListener("DOMContentLoaded", () => {
  const form = document.querySelector("form[data-autosubmit]");
  if (form) form.submit();
});
