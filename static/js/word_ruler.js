/* The word ruler under a waveform (issue 26): each word of the take's forced alignment at its
 * time, following the waveform's zoom and scroll; a click on a word moves the playhead to it, and
 * the word being played is marked. And the snapping rule for segment edges (`snap`): an edge
 * dropped near a word boundary lands on it.
 * The page lists the words as <li data-start data-end> inside [data-word-ruler]
 * (templates/annotation/labelling/_word_ruler.html); without JavaScript they stay a plain list.
 * A long take's words come per window instead (`setWords`, issue 46).
 * Exposes window.EchoWordRuler: attach(ws, view) -> {snap, nearest, between, setWords} and
 * snap(seconds, boundaries, tolerance). */
(function (root) {
  "use strict";

  // An edge snaps to a boundary within this many pixels on screen (so zooming in snaps less far),
  // and never further than MAX_SNAP_SECONDS.
  const SNAP_PX = 8;
  const MAX_SNAP_SECONDS = 0.1;

  /* The boundary nearest to `seconds` when it is within `tolerance` seconds, else `seconds`. */
  function snap(seconds, boundaries, tolerance) {
    let nearest = seconds;
    let distance = tolerance;
    boundaries.forEach(function (boundary) {
      const gap = Math.abs(boundary - seconds);
      if (gap <= distance) { nearest = boundary; distance = gap; }
    });
    return nearest;
  }

  /* Every word start and end, once each, in order. */
  function boundariesOf(words) {
    const all = [];
    words.forEach(function (word) { all.push(word.start, word.end); });
    return all.filter(function (value, index) { return all.indexOf(value) === index; }).sort(function (a, b) { return a - b; });
  }

  /* Lay the view's words out under `ws` (a wavesurfer instance); return {snap(seconds)}. */
  function attach(ws, view) {
    const list = view.querySelector("ol");
    const note = view.querySelector("[data-role=word-note]");
    let words = [];
    let boundaries = [];
    // The seconds whose words are loaded: all of a short take; a long take's window (`setWords`).
    let covered = view.dataset.windowed ? null : [-Infinity, Infinity];
    /* The words are the list's items: the page's (a short take), or a window's (`setWords`). */
    function readItems() {
      words = Array.from(view.querySelectorAll("li[data-start]")).map(function (item) {
        return { item: item, start: parseFloat(item.dataset.start), end: parseFloat(item.dataset.end) };
      }).filter(function (word) { return isFinite(word.start) && isFinite(word.end); });
      boundaries = boundariesOf(words);
      words.forEach(function (word) {
        word.item.addEventListener("click", function () { ws.setTime(word.start); });
      });
    }
    readItems();
    view.classList.add("timed");

    /* The whole take's width in pixels at the current zoom: the waveform scrolls inside it. */
    function totalWidth() {
      return Math.max(ws.getWrapper().scrollWidth, view.clientWidth) || 1;
    }

    let frame = 0;
    function layout() {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(function () {
        const duration = ws.getDuration();
        if (!duration || !list) return;
        list.style.width = totalWidth() + "px";
        list.style.transform = "translateX(" + -ws.getScroll() + "px)";
        words.forEach(function (word) {
          word.item.style.left = (100 * word.start) / duration + "%";
          word.item.style.width = (100 * Math.max(0, word.end - word.start)) / duration + "%";
        });
      });
    }
    ["ready", "zoom", "scroll", "redrawcomplete"].forEach(function (name) { ws.on(name, layout); });
    window.addEventListener("resize", layout);

    ws.on("timeupdate", function (seconds) {
      words.forEach(function (word) {
        word.item.classList.toggle("current", seconds >= word.start && seconds < word.end);
      });
    });

    /* A long take's words of the window in view (static/js/waveform.js loads them, issue 46):
     * `list` as the window endpoint gives it, [{text, start, end, stress}]; `total` the words the
     * window holds, more than `list` when there are too many to show at this zoom; `start` and
     * `end` the window's seconds. */
    function setWords(given, total, start, end) {
      if (!list) return;
      covered = given.length >= total ? [start, end] : null;
      list.textContent = "";
      given.forEach(function (word) {
        const item = document.createElement("li");
        item.dataset.start = String(word.start);
        item.dataset.end = String(word.end);
        if (word.stress) item.className = "stress-candidate";
        item.title = word.text + ": " + word.start.toFixed(2) + "–" + word.end.toFixed(2) + " s" + (word.stress ? ", sounds stressed" : "");
        item.textContent = word.text + " ";
        const small = document.createElement("small");
        small.className = "muted";
        small.textContent = word.start.toFixed(2) + " s";
        item.appendChild(small);
        list.appendChild(item);
      });
      readItems();
      if (note) {
        note.hidden = given.length >= total;
        note.textContent = total + " words in view: zoom in to see them";
      }
      layout();
    }

    return {
      setWords: setWords,
      /* `seconds` moved onto the nearest word boundary when one is close on screen. */
      snap: function (seconds) {
        const duration = ws.getDuration();
        if (!duration || !boundaries.length) return seconds;
        const pxPerSecond = totalWidth() / duration;
        return snap(seconds, boundaries, Math.min(MAX_SNAP_SECONDS, SNAP_PX / pxPerSecond));
      },
      /* `seconds` on the nearest word boundary, however far (a keyboard snap asks for it). */
      nearest: function (seconds) {
        return boundaries.length ? snap(seconds, boundaries, Infinity) : seconds;
      },
      /* The words mostly inside [start, end], as the segment's "Words" field shows them; null
       * when they are not loaded (a long take's part out of the window). */
      between: function (start, end) {
        if (!covered || start < covered[0] || end > covered[1]) return null;
        return words.filter(function (word) {
          const middle = (word.start + word.end) / 2;
          return middle >= start && middle < end;
        }).map(function (word) { return word.item.textContent.trim(); }).join(" ");
      },
    };
  }

  root.EchoWordRuler = { attach: attach, snap: snap };
})(typeof window !== "undefined" ? window : globalThis);
