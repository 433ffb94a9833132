// Training curves of an EchoChat job (chart.js). The data comes from the page's #ml-chart-data,
// which htmx replaces every few seconds while the job runs; the charts are updated in place.
(function () {
  "use strict";
  const palette = ["#2f5bd3", "#c0392b", "#1f8a4c", "#8e44ad", "#d35400", "#16a085", "#7f8c8d", "#b7950b"];
  const charts = {};

  function render() {
    const node = document.getElementById("ml-chart-data");
    const container = document.getElementById("ml-charts");
    if (!node || !container || !window.Chart) return;
    const data = JSON.parse(node.textContent);
    container.hidden = data.length === 0;
    data.forEach(function (chart) {
      const datasets = chart.series.map(function (series, index) {
        return { label: series.name, data: series.values, borderColor: palette[index % palette.length],
                 backgroundColor: palette[index % palette.length], spanGaps: true, pointRadius: 0, borderWidth: 1.5 };
      });
      if (charts[chart.id]) {
        charts[chart.id].data.labels = chart.steps;
        charts[chart.id].data.datasets = datasets;
        charts[chart.id].update("none");
        return;
      }
      const figure = document.createElement("figure");
      figure.className = "ml-chart";
      figure.innerHTML = "<figcaption></figcaption><div style=\"position: relative; height: 240px\"><canvas></canvas></div>";
      figure.querySelector("figcaption").textContent = chart.title;
      figure.dataset.chart = chart.id;
      container.appendChild(figure);
      charts[chart.id] = new window.Chart(figure.querySelector("canvas"), {
        type: "line",
        data: { labels: chart.steps, datasets: datasets },
        options: {
          responsive: true, maintainAspectRatio: false, animation: false,
          plugins: { legend: { position: "bottom" } },
          scales: { x: { title: { display: true, text: "step" } } },
        },
      });
    });
  }

  document.addEventListener("DOMContentLoaded", render);
  document.body.addEventListener("htmx:afterSettle", render);
})();
