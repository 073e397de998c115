// The one script: weight sliders show their value and re-run the search when let go; "Go
// back" and "Cancel" links go back in the history. Every page works without it (the links
// then go to their page), and the CSP lets no other script run.
document.addEventListener("DOMContentLoaded", () => {
  for (const link of document.querySelectorAll("a[data-back]")) {
    link.addEventListener("click", (event) => {
      if (window.history.length > 1) { event.preventDefault(); window.history.back(); }
    });
  }
  for (const slider of document.querySelectorAll("input[data-weight]")) {
    const shown = slider.nextElementSibling;
    slider.addEventListener("input", () => { if (shown) shown.textContent = slider.value; });
    slider.addEventListener("change", () => {
      const form = slider.form;
      if (form && form.elements.q && form.elements.q.value.trim()) form.submit();
    });
  }
});
