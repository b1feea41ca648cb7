// Recurring schedule form: keeps the "Next fire times" box in step with the fields being
// edited, saved or not. The server computes the times (the same cron code as the sweep).
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const box = document.querySelector(".fire-preview[data-url]");
  const form = box && box.closest("form");
  if (!form) return;
  const names = ["cron", "timezone", "starts_at_0", "starts_at_1", "ends_at_0", "ends_at_1"];
  let timer = null;
  let latest = 0;

  async function refresh() {
    const query = new URLSearchParams();
    for (const name of names) {
      const field = form.elements.namedItem(name);
      if (field) query.set(name, field.value);
    }
    const asked = ++latest;
    const response = await fetch(`${box.dataset.url}?${query}`, {credentials: "same-origin"});
    if (response.ok && asked === latest) box.innerHTML = await response.text();
  }

  form.addEventListener("input", (event) => {
    if (!names.includes(event.target.name)) return;
    clearTimeout(timer);
    timer = setTimeout(refresh, 300);
  });
});
