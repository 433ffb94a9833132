// Charts of the recording dashboard (chart.js), from the numbers the page also shows as tables.
(function () {
  "use strict";
  const node = document.getElementById("recording-charts");
  if (!node || !window.Chart) return;
  const data = JSON.parse(node.textContent);
  const common = { responsive: true, maintainAspectRatio: false, plugins: { legend: { position: "bottom" } } };

  function bar(id, labels, datasets, stacked) {
    const canvas = document.getElementById(id);
    if (!canvas) return;
    new window.Chart(canvas, {
      type: "bar",
      data: { labels: labels, datasets: datasets },
      options: Object.assign({}, common, {
        scales: { x: { stacked: stacked }, y: { stacked: stacked, beginAtZero: true, ticks: { precision: 0 } } },
      }),
    });
  }

  bar("chart-states", data.states.labels, [{ label: "Items", data: data.states.counts, backgroundColor: "#2f5bd3" }], false);
  bar("chart-actors", data.actors.labels, [
    { label: "Accepted", data: data.actors.accepted, backgroundColor: "#1f8a4c" },
    { label: "Rejected", data: data.actors.rejected, backgroundColor: "#c0392b" },
    { label: "Waiting", data: data.actors.waiting, backgroundColor: "#9aa8c7" },
  ], true);
  bar("chart-reviewers", data.reviewers.labels, [
    { label: "Accepted", data: data.reviewers.accepts, backgroundColor: "#1f8a4c" },
    { label: "Rejected", data: data.reviewers.rejects, backgroundColor: "#c0392b" },
    { label: "Waiting", data: data.reviewers.open, backgroundColor: "#9aa8c7" },
  ], true);
})();
