(function () {
  "use strict";
  var root = document.documentElement;
  var windowView = document.getElementById("view-window");
  var wholeView = document.getElementById("view-whole");
  var button = document.getElementById("toggle");
  var status = document.getElementById("status");

  function count(view, selector) {
    return view ? view.querySelectorAll(selector).length : 0;
  }

  function show(whole) {
    var view = whole || !windowView ? wholeView : windowView;
    if (windowView) { windowView.hidden = view !== windowView; }
    wholeView.hidden = view !== wholeView;
    document.body.className = whole ? "whole" : "";
    root.setAttribute("data-view", view === wholeView ? "whole" : "window");
    button.textContent = whole ? "show the window around the failure" : "show the whole run";
    var svg = view.querySelector("svg.timeline");
    var first = Number(svg.getAttribute("data-first-slot"));
    var slots = Number(view.getAttribute("data-slots"));
    status.textContent = (view === wholeView ? "the whole run: " : "slots " + first + ".." + (first + slots) + " of the run: ") +
      count(view, ".op") + " operations, " + count(view, "rect.lane") + " lanes, " +
      count(view, ".crash-marker") + " power losses";
    // The end of the view holds the failure: start scrolled there.
    var scroll = view.querySelector(".scroll");
    scroll.scrollLeft = scroll.scrollWidth;
  }

  // "#whole" in the address opens on the whole run (links, the browser check).
  var whole = !windowView || window.location.hash === "#whole";
  button.addEventListener("click", function () { whole = !whole; show(whole); });
  show(whole);

  // Facts the browser test reads back from the rendered page.
  var shown = windowView || wholeView;
  var facts = document.createElement("div");
  facts.id = "rendered-facts";
  facts.hidden = true;
  facts.setAttribute("data-lanes", String(count(shown, "rect.lane")));
  facts.setAttribute("data-file-lanes", String(count(shown, ".lane-label.file")));
  facts.setAttribute("data-crash-markers", String(count(shown, ".crash-marker")));
  facts.setAttribute("data-diff", document.getElementById("diff") ? "yes" : "no");
  document.body.appendChild(facts);
  root.setAttribute("data-rendered", "1");
})();
