// Interval whiskers for Chart.js bar and line charts (a study's MOS, a dialogue study's turns, a
// build's spot-check acceptance): each dataset carries `low` and `high` arrays beside `data`. The
// plugin draws a line from low to high at every point, capped on bars and clipped to the y scale,
// and counts what it drew in `canvas.dataset[countName]` (the browser tests read it).
window.EchoErrorBars = function (countName) {
  "use strict";
  return {
    id: "echoErrorBars",
    afterDatasetsDraw(chart) {
      const { ctx, scales } = chart;
      const clip = (value) => Math.min(scales.y.max, Math.max(scales.y.min, value));
      let drawn = 0;
      ctx.save();
      ctx.lineWidth = 1.5;
      chart.data.datasets.forEach((dataset, datasetIndex) => {
        const meta = chart.getDatasetMeta(datasetIndex);
        if (meta.hidden || !dataset.low || !dataset.high) return;
        ctx.strokeStyle = meta.type === "line" ? dataset.borderColor : "#1d2433";
        meta.data.forEach((element, index) => {
          const low = dataset.low[index];
          const high = dataset.high[index];
          if (low === null || high === null || low === undefined || high === undefined) return;
          const top = scales.y.getPixelForValue(clip(high));
          const bottom = scales.y.getPixelForValue(clip(low));
          ctx.beginPath();
          ctx.moveTo(element.x, top);
          ctx.lineTo(element.x, bottom);
          if (meta.type === "bar") {
            const cap = Math.min(6, element.width / 3);
            ctx.moveTo(element.x - cap, top);
            ctx.lineTo(element.x + cap, top);
            ctx.moveTo(element.x - cap, bottom);
            ctx.lineTo(element.x + cap, bottom);
          }
          ctx.stroke();
          drawn += 1;
        });
      });
      ctx.restore();
      chart.canvas.dataset[countName] = String(drawn);
    },
  };
};
