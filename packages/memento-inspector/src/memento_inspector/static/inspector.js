// The one script: weight sliders show their value and re-run the search when let go.
// Every page works without it.
document.addEventListener("DOMContentLoaded", () => {
  for (const slider of document.querySelectorAll("input[data-weight]")) {
    const shown = slider.nextElementSibling;
    slider.addEventListener("input", () => { if (shown) shown.textContent = slider.value; });
    slider.addEventListener("change", () => {
      const form = slider.form;
      if (form && form.elements.q && form.elements.q.value.trim()) form.submit();
    });
  }
});
