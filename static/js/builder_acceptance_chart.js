// The build page's spot-check acceptance per stage: one bar per stage (percent of checked samples
// not fixed or dropped because of it) with Wilson 95% interval whiskers from `low` / `high`.
(function () {
  "use strict";
  const canvas = document.getElementById("acceptance-chart");
  const source = document.getElementById("acceptance-chart-data");
  if (!canvas || !source || typeof Chart === "undefined") return;
  const data = JSON.parse(source.textContent);

  const whiskers = {
    id: "whiskers",
    afterDatasetsDraw(chart) {
      const { ctx, scales } = chart;
      const meta = chart.getDatasetMeta(0);
      let drawn = 0;
      ctx.save();
      ctx.strokeStyle = "#1d2433";
      ctx.lineWidth = 1.5;
      meta.data.forEach((bar, i) => {
        if (data.low[i] === null || data.high[i] === null) return;
        const top = scales.y.getPixelForValue(data.high[i]);
        const bottom = scales.y.getPixelForValue(data.low[i]);
        const cap = Math.min(6, bar.width / 3);
        ctx.beginPath();
        ctx.moveTo(bar.x, top);
        ctx.lineTo(bar.x, bottom);
        ctx.moveTo(bar.x - cap, top);
        ctx.lineTo(bar.x + cap, top);
        ctx.moveTo(bar.x - cap, bottom);
        ctx.lineTo(bar.x + cap, bottom);
        ctx.stroke();
        drawn += 1;
      });
      ctx.restore();
      canvas.dataset.whiskers = String(drawn);
    },
  };

  const chart = new Chart(canvas, {
    type: "bar",
    data: {
      labels: data.labels,
      datasets: [{ label: "Accepted (%)", data: data.rate, backgroundColor: "#2f5bd3" }],
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
