// passdown web view: progressive enhancement only. Every page works without this file.
// Keyboard: j/k move through rows, Enter opens, / focuses search. The timeline listens for
// new handoffs (server-sent events) and inserts the rows the server rendered.
"use strict";

(function () {
  document.documentElement.classList.add("js");

  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll(".row"));
  }

  function select(index) {
    var all = rows();
    if (!all.length) return;
    index = Math.max(0, Math.min(all.length - 1, index));
    all.forEach(function (row) { row.classList.remove("selected"); });
    all[index].classList.add("selected");
    all[index].scrollIntoView({ block: "nearest" });
  }

  function selectedIndex() {
    return rows().findIndex(function (row) { return row.classList.contains("selected"); });
  }

  function typing(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || (target && target.isContentEditable);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    var search = document.getElementById("search");
    if (event.key === "/" && search) {
      event.preventDefault();
      search.focus();
      search.select();
    } else if (event.key === "j") {
      select(selectedIndex() + 1);
    } else if (event.key === "k") {
      select(selectedIndex() < 0 ? 0 : selectedIndex() - 1);
    } else if (event.key === "Enter") {
      var current = rows()[selectedIndex()];
      var link = current && current.querySelector("a.open, a");
      if (link) link.click();
    }
  });

  // the project switcher follows the choice at once
  var switcher = document.getElementById("project-switch");
  if (switcher) {
    switcher.addEventListener("change", function () { switcher.form.submit(); });
  }

  // compare: enabled once exactly two rows are picked
  var compareButton = document.getElementById("compare-picked");
  function updateCompare() {
    if (!compareButton) return;
    var picked = document.querySelectorAll('.timeline input[name="pick"]:checked').length;
    compareButton.disabled = picked !== 2;
  }
  document.addEventListener("change", function (event) {
    if (event.target && event.target.name === "pick") updateCompare();
  });
  updateCompare();

  // live timeline
  var live = document.getElementById("live");
  var list = document.getElementById("timeline");
  if (live && list && window.EventSource) {
    var source = new EventSource(live.getAttribute("data-events"));
    source.addEventListener("open", function () { live.hidden = false; });
    source.addEventListener("error", function () { live.hidden = true; });
    source.addEventListener("handoff", function (event) {
      var data = JSON.parse(event.data);
      var template = document.createElement("template");
      template.innerHTML = data.html.trim();  // rendered and escaped by the server
      var row = template.content.firstElementChild;
      if (!row) return;
      var known = rows().filter(function (r) { return r.getAttribute("data-id") === data.id; })[0];
      if (known) {  // a status change: replace the row in place, keeping what the reader did
        if (known.innerHTML === row.innerHTML) return;
        var picked = known.querySelector('input[name="pick"]');
        row.querySelector('input[name="pick"]').checked = !!(picked && picked.checked);
        if (known.classList.contains("selected")) row.classList.add("selected");
        row.classList.add("fresh");
        known.replaceWith(row);
        return;
      }
      row.classList.add("fresh");
      list.insertBefore(row, list.firstElementChild);
      var empty = document.getElementById("empty");
      if (empty) empty.remove();
    });
  }
})();
