/* Reflow (WCAG 1.4.10): a data table wider than its column scrolls inside its own region, never the
 * page. Templates that know their tables wrap them (<div class="scroll-x" role="region" tabindex="0"
 * aria-label="…">); this wraps every other table in <main> the same way, named after its caption or
 * the heading above it, after the page loads and after every htmx swap. The region takes focus
 * (tabindex 0) so the arrow keys scroll it (axe: scrollable-region-focusable). */
(function () {
  "use strict";

  function nameOf(table) {
    const caption = table.querySelector("caption");
    if (caption && caption.textContent.trim()) return caption.textContent.trim();
    if (table.getAttribute("aria-label")) return table.getAttribute("aria-label");
    for (let node = table; node && node.tagName !== "MAIN"; node = node.parentElement) {
      for (let before = node.previousElementSibling; before; before = before.previousElementSibling) {
        const heading = before.matches("h1, h2, h3, h4, legend") ? before : before.querySelector("h1, h2, h3, h4, legend");
        if (heading && heading.textContent.trim()) return heading.textContent.trim().replace(/\s+/g, " ");
      }
    }
    return "Table";
  }

  function wrap(root) {
    root.querySelectorAll("main table").forEach(function (table) {
      if (table.closest(".scroll-x, [data-no-region]")) return;
      const region = document.createElement("div");
      region.className = "scroll-x";
      region.setAttribute("role", "region");
      region.setAttribute("tabindex", "0");
      region.setAttribute("aria-label", nameOf(table) + " (scrolls sideways)");
      table.parentNode.insertBefore(region, table);
      region.appendChild(table);
    });
  }

  document.addEventListener("DOMContentLoaded", function () { wrap(document); });
  document.addEventListener("htmx:afterSettle", function () { wrap(document); });
})();
