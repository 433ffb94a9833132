// Blind review with the keyboard: space plays or pauses, "a" accepts, "r" opens the reasons
// (1-6 tick them), enter sends the reject, escape closes the reasons, + and - zoom, [ and ] change
// the speed (remembered). Typing in the comment box is never taken for a shortcut. One table
// (SHORTCUTS) runs the keys and writes the page's list of them (EchoKeys.use, shortcuts.js).
//
// The playback gate (playback_gate.js): the verdict buttons stay disabled until the take has played
// to the end; the server refuses a verdict on a take whose playback it has not recorded.
(function () {
  "use strict";
  const section = document.getElementById("review");
  if (!section) return;
  const container = document.getElementById("waveform");
  const playButton = document.getElementById("play-toggle");
  const speed = document.getElementById("speed");
  const form = document.getElementById("verdict-form");
  const status = document.getElementById("playback-status");
  let unlocked = section.dataset.unlocked === "true";

  function isTyping(target) {
    return target instanceof HTMLTextAreaElement ||
      (target instanceof HTMLInputElement && !["checkbox", "radio", "button", "submit"].includes(target.type));
  }

  const player = EchoWaveform.create({
    container: container, subject: "the take under review", url: section.dataset.audioUrl, speedSelect: speed,
  });
  EchoWaveform.bindPlayButton(player, playButton);
  // The page's state for people and tests alike: is the take playing right now?
  ["play", "pause", "finish"].forEach(function (name) {
    player.on(name, function () { container.dataset.playing = String(name === "play"); });
  });
  section.querySelectorAll("[data-action=zoom-in], [data-action=zoom-out]").forEach(function (button) {
    button.addEventListener("click", function () {
      EchoWaveform.zoomBy(player, container, button.dataset.action === "zoom-in" ? 1 : -1);
    });
  });

  function say(text, isError) {
    if (!status) return;
    status.textContent = text;
    status.classList.toggle("error", Boolean(isError));
    status.classList.toggle("muted", !isError);
  }

  function unlock() {
    unlocked = true;
    section.dataset.unlocked = "true";
    if (form) form.querySelectorAll("button[type=submit]").forEach(function (button) { button.disabled = false; });
    say("Played to the end: the verdict is open.", false);
  }

  EchoPlaybackGate.gate(EchoPlaybackGate.waveformSource(player), {
    isUnlocked: function () { return unlocked; },
    mayReport: function () { return Boolean(form); },  // a decided take has no verdict to open
    playedUrl: section.dataset.playedUrl,
    onUnlocked: unlock,
    onRefused: function (message) { say(message, true); },
    refusedText: "The playback could not be recorded; play the take again.",
  });

  const hints = document.querySelector("[data-shortcut-list]");
  const reasons = document.getElementById("reasons");
  const acceptButton = document.getElementById("accept");
  const rejectButton = document.getElementById("reject");
  const rejecting = () => Boolean(form) && form.classList.contains("rejecting");
  const reasonBox = (key) => form && form.querySelector('[name=reasons][data-key="' + key + '"]');
  const nReasons = form ? form.querySelectorAll("[name=reasons]").length : 0;
  const open = () => Boolean(form);

  function openReasons() {
    form.classList.add("rejecting");
    reasons.focus();
  }

  function sendVerdict(button) {
    if (!unlocked) { say("Play the whole take once before giving a verdict.", true); return; }
    form.requestSubmit(button);
  }

  const SHORTCUTS = [
    // A focused checkbox or button keeps its own space bar (tick, press); elsewhere space plays.
    { keys: "Space", hint: "Play / pause (a focused checkbox or button: tick or press it)",
      on: (e) => e.key === " " && !EchoKeys.ownsSpace(e.target), run: (e) => { e.preventDefault(); player.playPause(); } },
    { keys: "+ −, wheel", hint: "Zoom the waveform in / out", on: (e) => Boolean(EchoWaveform.zoomKey(e)),
      run: (e) => { e.preventDefault(); EchoWaveform.zoomBy(player, container, EchoWaveform.zoomKey(e)); } },
    { keys: "[ ]", hint: "Slower / faster playback (remembered)", on: (e) => e.key === "[" || e.key === "]",
      run: (e) => EchoWaveform.stepSpeed(speed, e.key === "[" ? -1 : 1) },
    { keys: "a", hint: "Accept", when: open, on: (e) => open() && (e.key === "a" || e.key === "A"),
      run: (e) => { e.preventDefault(); sendVerdict(acceptButton); } },
    { keys: "r", hint: "Reject: open the reasons", when: open, on: (e) => open() && (e.key === "r" || e.key === "R"),
      run: (e) => { e.preventDefault(); openReasons(); } },
    { keys: "1 – " + nReasons, hint: "Tick or untick a reason (the reasons open)", when: open,
      on: (e) => rejecting() && /^[1-9]$/.test(e.key) && Boolean(reasonBox(e.key)),
      run: (e) => { e.preventDefault(); const box = reasonBox(e.key); box.checked = !box.checked; } },
    { keys: "Enter", hint: "Send the reject (the reasons open)", when: open, on: (e) => rejecting() && e.key === "Enter",
      run: (e) => { e.preventDefault(); sendVerdict(rejectButton); } },
    { keys: "Esc", hint: "Close the reasons; leave whatever has focus", on: (e) => rejecting() && e.key === "Escape",
      run: () => form.classList.remove("rejecting") },
  ];

  if (!form) {
    EchoKeys.use(hints, SHORTCUTS, (event) => isTyping(event.target));
    return;
  }

  form.classList.add("js-enhanced");
  if (form.querySelector("[data-testid=form-errors]") || form.querySelector("[name=reasons]:checked")) {
    form.classList.add("rejecting");
  }

  rejectButton.addEventListener("click", function (event) {
    if (!form.classList.contains("rejecting")) { event.preventDefault(); openReasons(); }
  });

  // Esc also leaves whatever has focus (EchoKeys.bind, static/js/shortcuts.js).
  EchoKeys.use(hints, SHORTCUTS, (event) => event.ctrlKey || event.metaKey || event.altKey || isTyping(event.target));
})();
