// The operators' dashboard: draws each model's charts (Chart.js, from django-admincharts'
// static files) and refreshes the figures from the page's JSON endpoint every few seconds.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("scheduling-dashboard");
  const status = document.getElementById("dashboard-status");
  const initial = document.getElementById("dashboard-data");
  if (!root || !initial) return;
  const colors = {
    published: "#417690", handled: "#2e7d32", handle_failures: "#ba2121",
    lateness_p50: "#79aec8", lateness_p99: "#e08e0b",
  };
  const names = {
    published: "published", handled: "handled", handle_failures: "failed",
    lateness_p50: "p50", lateness_p99: "p99",
  };
  const lines = {
    minutes: ["published", "handled", "handle_failures"],
    day: ["published", "handled", "handle_failures"],
    lateness: ["lateness_p50", "lateness_p99"],
  };
  const charts = new Map(); // "<model> <chart>" -> Chart

  const clock = (iso) => new Date(iso).toLocaleTimeString([], {
    hour: "2-digit", minute: "2-digit", hourCycle: "h23",
  });

  function chartData(model, kind) {
    const columns = kind === "day" ? model.day : model.minutes;
    return {
      labels: columns.t.map(clock),
      datasets: lines[kind].map((line) => ({
        label: names[line],
        data: columns[line],
        borderColor: colors[line],
        backgroundColor: colors[line],
        // Handled mostly equals published: drawn on top (lower order), thicker, with published
        // dashed beneath it, so both lines show where they coincide.
        borderWidth: line === "handled" ? 2.5 : 1.5,
        borderDash: line === "published" ? [6, 4] : [],
        order: line === "handled" ? 0 : 1,
        // Lateness exists only for minutes that published: show each as a point.
        pointRadius: kind === "lateness" ? 2 : 0,
        spanGaps: false,
      })),
    };
  }

  function draw(model, canvas) {
    const kind = canvas.dataset.chart;
    const key = `${model.model} ${kind}`;
    const data = chartData(model, kind);
    const existing = charts.get(key);
    if (existing) {
      existing.data = data;
      existing.update("none");
      return;
    }
    charts.set(key, new Chart(canvas, {
      type: "line",
      data,
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        interaction: {mode: "index", intersect: false},
        scales: {
          x: {ticks: {maxTicksLimit: 6, autoSkip: true, maxRotation: 0}},
          y: {beginAtZero: true, ticks: {precision: kind === "lateness" ? undefined : 0}},
        },
        plugins: {legend: {position: "bottom", labels: {boxWidth: 12}}},
      },
    }));
  }

  function field(model, path) {
    return path.split(".").reduce((value, part) => (value == null ? value : value[part]), model);
  }

  // A model in alarm: its row tinted, the cell at fault in bold, and the alarm's own words.
  function showAlarms(row, model) {
    row.classList.toggle("alarm", model.alarms.length > 0);
    const labels = row.querySelector("[data-alarms]");
    if (labels) {
      labels.replaceChildren(...model.alarms.map((text) => {
        const item = document.createElement("li");
        item.textContent = text;
        return item;
      }));
    }
    for (const cell of row.querySelectorAll("[data-alarm-when]")) {
      cell.classList.toggle("alarm-cell", Boolean(model[cell.dataset.alarmWhen]));
    }
  }

  function showAlarmSummary(count) {
    const summary = document.getElementById("dashboard-alarm-summary");
    if (!summary) return;
    summary.hidden = count === 0;
    summary.querySelector("[data-in-alarm]").textContent = `${count} model${count === 1 ? "" : "s"}`;
  }

  function show(payload) {
    for (const model of payload.models) {
      const row = root.ownerDocument.querySelector(`#dashboard-summary tr[data-model="${model.model}"]`);
      if (row) {
        for (const cell of row.querySelectorAll("[data-field]")) {
          const value = field(model, cell.dataset.field);
          cell.textContent = cell.dataset.field === "oldest_due_seconds"
            ? (value == null ? "\u2013" : `${value.toFixed(1)} s`)
            : String(value);
        }
        showAlarms(row, model);
      }
      const section = document.querySelector(`.dashboard-model[data-model="${model.model}"]`);
      if (section && window.Chart) {
        for (const canvas of section.querySelectorAll("canvas[data-chart]")) draw(model, canvas);
      }
    }
    showAlarmSummary(payload.in_alarm);
    root.dataset.generatedAt = payload.generated_at; // which figures are on screen
    const at = new Date(payload.generated_at).toLocaleTimeString();
    status.textContent = `Figures as of ${at}; they refresh every ${payload.refresh_seconds} s.`;
    status.classList.remove("stale");
  }

  async function refresh() {
    if (document.hidden) return;
    try {
      const response = await fetch(root.dataset.url, {credentials: "same-origin"});
      // A redirect means the session ended: the login page is not figures.
      if (!response.ok || response.redirected) throw new Error(`HTTP ${response.status}`);
      show(await response.json());
    } catch (error) {
      status.textContent = `Refresh failed (${error.message}); the figures below may be old.`;
      status.classList.add("stale");
    }
  }

  const payload = JSON.parse(initial.textContent);
  show(payload);
  setInterval(refresh, payload.refresh_seconds * 1000);
});
