// The rating page of a dialogue study: playback gating per assistant turn, and the compact turns'
// "show the whole turn" buttons.
//
// Each turn's questions stay disabled until that turn's reply has played to the end (the gate:
// playback_gate.js; the server also checks that the earlier replies were heard first and refuses a
// turn's rating until it has recorded the playback). One recording plays at a time.
(function () {
  "use strict";
  const root = document.getElementById("dialogue-rating");
  if (!root) return;
  const audios = Array.from(root.querySelectorAll("audio"));

  audios.forEach((audio) => {
    audio.addEventListener("play", () => {
      audios.forEach((other) => {
        if (other !== audio) other.pause();
      });
    });
  });

  // Compact turns show a line of each speaker's text; where a line cuts a text short, the turn's
  // button shows the full text and back.
  root.querySelectorAll(".dialogue-turn.compact").forEach((section) => {
    const more = section.querySelector(".turn-more");
    if (!more) return;
    section.dataset.collapsed = "true";
    const texts = Array.from(section.querySelectorAll(".script-text"));
    more.hidden = !texts.some((text) => text.scrollHeight > text.clientHeight + 1);
    more.addEventListener("click", () => {
      const expand = section.dataset.collapsed === "true";
      section.dataset.collapsed = expand ? "false" : "true";
      more.setAttribute("aria-expanded", String(expand));
      more.textContent = expand ? "Show less" : "Show the full text";
    });
  });

  root.querySelectorAll(".dialogue-turn").forEach((section) => {
    const reply = section.querySelector(".reply-audio");
    const status = section.querySelector(".playback-status");
    const controls = section.querySelector(".turn-controls");
    if (!reply) return;

    function unlocked() {
      return section.dataset.unlocked === "true";
    }

    function say(text) {
      if (status) status.textContent = text;
    }

    EchoPlaybackGate.gate(EchoPlaybackGate.audioSource(reply), {
      isUnlocked: unlocked,
      playedUrl: section.dataset.playedUrl,
      onUnlocked: () => {
        section.dataset.unlocked = "true";
        if (controls) controls.disabled = false;
        say(
          section.dataset.later === "true"
            ? `Played: its questions open once turn ${Number(section.dataset.turn) - 1} is rated.`
            : "Played: this turn's questions are open."
        );
      },
      onRefused: say,
      refusedText: "The playback could not be recorded; play the reply again.",
    });

    // Replies are heard in order (the server's rule): say so as soon as a later one is started,
    // not only after it has played to the end for nothing.
    reply.addEventListener("play", () => {
      if (unlocked()) return;
      const sections = Array.from(root.querySelectorAll(".dialogue-turn"));
      const waiting = sections.slice(0, sections.indexOf(section)).filter(
        (earlier) => earlier.querySelector(".reply-audio") && earlier.dataset.unlocked !== "true"
      );
      if (waiting.length) {
        const turns = waiting.map((earlier) => earlier.dataset.turn).join(", ");
        const replies = waiting.length > 1 ? `replies of turns ${turns}` : `reply of turn ${turns}`;
        say(`Play the ${replies} first: replies are heard in order, so this turn's questions open after ${waiting.length > 1 ? "those" : "it"}.`);
      }
    });
  });
})();
