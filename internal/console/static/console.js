// cdkx console: stream a running deployment's events into its table (Server-Sent Events). The page reads
// without it; every value is set as text, never as HTML.
(function () {
  "use strict";
  var table = document.getElementById("event-table");
  if (!table || !table.dataset.live || !window.EventSource) { return; }
  var body = table.tBodies[0];
  var es = new EventSource(table.dataset.live + "?after=" + encodeURIComponent(table.dataset.after || "0"));
  es.onopen = function () { table.dataset.stream = "open"; }; // for tests and styles: events flow now
  es.addEventListener("event", function (m) {
    var e = JSON.parse(m.data), tr = document.createElement("tr");
    tr.className = "event";
    [e.time, e.stack, e.logicalId, e.type, e.status, e.reason].forEach(function (v) {
      var td = document.createElement("td"); td.textContent = v; tr.appendChild(td);
    });
    var none = body.querySelector("tr.none"); if (none) { none.remove(); }
    body.appendChild(tr);
  });
  es.addEventListener("done", function (m) {
    var d = JSON.parse(m.data), s = document.getElementById("status"), f = document.getElementById("final");
    es.close();
    if (s) { s.textContent = d.status; s.dataset.status = d.status; s.className = "status s-" + d.status.toLowerCase(); }
    if (f) { f.textContent = "Final: " + d.status + (d.error ? " — " + d.error : "") + "."; }
    var n = document.getElementById("live-note"); if (n) { n.remove(); }
    // The buttons were those of a deployment in flight (Abort): a final one has others, shown on reload.
    var a = document.querySelector("section.actions");
    if (a) { a.textContent = "The deployment is " + d.status + ": reload the page for what can be done now."; }
  });
  es.addEventListener("failure", function () { es.close(); });
})();
