// The dashboard's only script besides htmx (the Content-Security-Policy allows no inline script).
(function () {
  "use strict";
  // Errors htmx does not swap (5xx, 403, a dropped connection) become one readable banner.
  function say(text) {
    var flash = document.getElementById("flash");
    var p = document.createElement("p");
    p.className = "notice error";
    p.setAttribute("role", "alert");
    p.textContent = text;
    flash.replaceChildren(p);
  }
  // A refusal the server explains in plain text (429: too many jobs waiting) is said in its words.
  document.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail.xhr;
    var status = xhr.status;
    var plain = (xhr.getResponseHeader("Content-Type") || "").indexOf("text/plain") === 0;
    say(status === 403 ? "That was refused (403): your login may have expired. Reload the page and try again."
      : status === 404 ? "Not found (404): it may have been deleted. Reload the page."
      : status < 500 && plain && xhr.responseText ? "Not done (" + status + "): " + xhr.responseText
      : "Something went wrong on the server (" + status + "). Please try again.");
  });
  document.addEventListener("htmx:sendError", function () {
    say("Could not reach the server. Check that ottoweb is running and try again.");
  });
  // <form data-confirm="question">: asks before it is sent.
  document.addEventListener("submit", function (e) {
    var question = e.target.getAttribute && e.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      e.preventDefault();
    }
  });
  // A recall pushes its search into the address with the tab shown now (the tabs switch in place,
  // after the form's hidden tab was written): reloading it, or coming Back to it, opens that tab.
  document.addEventListener("htmx:configRequest", function (e) {
    var panel = document.getElementById("tab-panel");
    var form = e.detail.elt;
    if (panel && form.classList && form.classList.contains("recall-form")) {
      e.detail.parameters.tab = panel.getAttribute("data-tab");
    }
  });
  // A tab switches in place and pushes its address with the recall shown above it kept
  // (?q=…&match=…&kind=…): reloading it, or coming Back to it, shows both.
  document.addEventListener("htmx:beforeRequest", function (e) {
    var tab = e.detail.elt;
    if (!tab.matches || !tab.matches('[role="tab"][hx-push-url]')) {
      return;
    }
    var address = new URLSearchParams(window.location.search);
    address.set("tab", new URLSearchParams(tab.getAttribute("href").split("?")[1]).get("tab"));
    tab.setAttribute("hx-push-url", "?" + address.toString());
  });
  // The summary's bullets reload when the session changes (a pin can add a pinned bullet): a bullet
  // open before stays open, and opening it again loads its cited turns as they are now.
  var reopen = null;
  document.addEventListener("htmx:beforeSwap", function (e) {
    var target = e.detail.target;
    if (target && target.id === "summary-bullets") {
      reopen = Array.prototype.map.call(target.querySelectorAll("details[open][id]"), function (d) {
        return d.id;
      });
    }
  });
  // htmx:load comes once the new list is processed, so a bullet opened again finds its trigger ready.
  document.addEventListener("htmx:load", function (e) {
    if (!reopen || e.detail.elt.id !== "summary-bullets") {
      return;
    }
    var ids = reopen;
    reopen = null;
    ids.forEach(function (id) {
      var details = document.getElementById(id);
      if (details) {
        details.open = true;
      }
    });
  });
  // A pin toggle is swapped for its new state in every copy of it (X, Y, the pinned turns, a
  // bullet's turns, a recall's hits), and the pinned turns and the bullets reload: the focused button
  // goes with them, and the keyboard fell to the page's top. It goes back to the same turn's toggle
  // in the place it was pressed (the list, the open bullet, the recall) once that place is shown
  // again; where the turn has left it (unpinned from the pinned turns), to its toggle elsewhere, or
  // to the place itself — a bullet's own summary. Only while the focus is lost, until the person
  // presses a key or the pointer.
  var pinFocus = null;
  document.addEventListener("htmx:beforeRequest", function (e) {
    var form = e.detail.elt;
    if (!form.classList || !form.classList.contains("pin")) {
      return;
    }
    var place = form.closest("#summary-bullets details[id]") || form.parentElement.closest("[id]");
    var toggle = /(?:^|\s)(pin-at-\d+)(?:\s|$)/.exec(form.className);
    pinFocus = place && toggle ? { place: place.id, toggle: toggle[1] } : null;
  });
  function forgetPinFocus() {
    pinFocus = null;
  }
  document.addEventListener("keydown", forgetPinFocus);
  document.addEventListener("pointerdown", forgetPinFocus);
  function shown(element) {
    return element.getClientRects().length > 0;
  }
  document.addEventListener("htmx:load", function () {
    var active = document.activeElement;
    if (!pinFocus || (active && active !== document.body)) {
      return;
    }
    var place = document.getElementById(pinFocus.place);
    if (!place) {
      return; // being reloaded: its new copy comes with a later htmx:load
    }
    var bullet = place.matches("#summary-bullets details");
    if (bullet && (!place.open || !place.querySelector(".cited-turns"))) {
      return; // reloaded: not opened again yet, or its turns not loaded again yet
    }
    var selector = "." + pinFocus.toggle + " button";
    var here = place.querySelector(selector);
    var elsewhere = Array.prototype.filter.call(document.querySelectorAll(selector), shown)[0];
    if (here || bullet) {
      (here || place.querySelector("summary")).focus();
    } else if (elsewhere) {
      elsewhere.focus();
    } else {
      place.setAttribute("tabindex", "-1");
      place.focus();
    }
  });
  // <input data-select-on-focus>: a value to copy (a new token) is selected whole.
  document.addEventListener("focusin", function (e) {
    if (e.target.hasAttribute && e.target.hasAttribute("data-select-on-focus")) {
      e.target.select();
    }
  });
})();
