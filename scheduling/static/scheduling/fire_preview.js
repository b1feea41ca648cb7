// Recurring schedule form: keeps the "Next fire times" box in step with the fields being
// edited, saved or not: the fire times as the calendars leave them, the payload the first of
// them would publish, and the fire times at the next DST changes under the DST policies. The
// server computes them (the same cron, calendar and template code as the sweep).
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const box = document.querySelector(".fire-preview[data-url]");
  const form = box && box.closest("form");
  if (!form) return;
  const names = [
    "name", "cron", "timezone", "starts_at_0", "starts_at_1", "ends_at_0", "ends_at_1",
    "payload_template", "template_timezone", "calendars", "calendar_policy",
    "dst_gap_policy", "dst_repeat_policy",
  ];
  // The admin's Today/Now links, calendar and clock set a field without an input event.
  const pickers = ".datetimeshortcuts, .calendarbox, .clockbox";
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
    // A redirect means the session ended: the login page does not belong in the box.
    if (!response.ok || response.redirected) return;
    const html = await response.text();
    if (asked === latest) box.innerHTML = html;
  }

  function soon() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 300);
  }

  form.addEventListener("input", (event) => {
    if (names.includes(event.target.name)) soon();
  });
  document.addEventListener("click", (event) => {
    if (event.target.closest(pickers)) soon();
  });
});
