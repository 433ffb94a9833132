// The build page's spot-check acceptance per stage: one bar per stage (percent of checked samples
// not fixed or dropped because of it) with Wilson 95% interval whiskers from `low` / `high`.
(function () {
  "use strict";
  const canvas = document.getElementById("acceptance-chart");
  const source = document.getElementById("acceptance-chart-data");
  if (!canvas || !source || typeof Chart === "undefined") return;
  const data = JSON.parse(source.textContent);

  const whiskers = EchoErrorBars("whiskers");

  const chart = new Chart(canvas, {
    type: "bar",
    data: {
      labels: data.labels,
      datasets: [
        { label: "Accepted (%)", data: data.rate, low: data.low, high: data.high, backgroundColor: "#2f5bd3" },
      ],
    },
    options: {
      maintainAspectRatio: false,
      animation: false,
      scales: { y: { min: 0, max: 100, title: { display: true, text: "Accepted by spot-check (%), 95% interval" } } },
      plugins: {
        legend: { display: false },
        tooltip: {
          callbacks: {
            label(context) {
              const i = context.dataIndex;
              return `${context.parsed.y}% [${data.low[i]}, ${data.high[i]}], n = ${data.n[i]} checks`;
            },
          },
        },
      },
    },
    plugins: [whiskers],
  });
  canvas.dataset.rendered = String(chart.data.datasets[0].data.length);
})();
