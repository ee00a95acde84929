/* The Training job tab (task_instance.html) and the Training jobs page (jobs.html).
 *
 * Plain JavaScript, no build step and nothing fetched from another host. Both pages run in an iframe of
 * Airflow's UI, same origin, under /trainjob/ui/...; every URL here is relative to the page, so a
 * deployment under a sub-path works too. Data comes from the JSON API under /trainjob/api/ (see the issue's
 * design contract); the page never builds a namespace or a job name into a request.
 *
 * Airflow renders plugin views in an <iframe sandbox="allow-scripts allow-same-origin allow-forms
 * allow-downloads">: without allow-top-navigation or allow-popups a link cannot leave the frame by itself,
 * so links into Airflow (and to a dashboard) are followed through the parent page (see followLink).
 */
(function () {
  "use strict";

  var API = "../api/";
  var SVG_NS = "http://www.w3.org/2000/svg";

  // ------------------------------------------------------------------ DOM helpers

  /** h("div", {class: "x", onclick: f, "aria-label": "y"}, child, "text", [more]) -> element */
  function h(tag, props) {
    var el = document.createElement(tag);
    setProps(el, props);
    appendAll(el, Array.prototype.slice.call(arguments, 2));
    return el;
  }

  function s(tag, props) {
    var el = document.createElementNS(SVG_NS, tag);
    setProps(el, props);
    appendAll(el, Array.prototype.slice.call(arguments, 2));
    return el;
  }

  function setProps(el, props) {
    if (!props) return;
    Object.keys(props).forEach(function (key) {
      var value = props[key];
      if (value === null || value === undefined || value === false) return;
      if (key.slice(0, 2) === "on" && typeof value === "function") {
        el.addEventListener(key.slice(2), value);
      } else if (key === "text") {
        el.textContent = value;
      } else {
        el.setAttribute(key, value === true ? "" : String(value));
      }
    });
  }

  function appendAll(el, children) {
    children.forEach(function (child) {
      if (child === null || child === undefined || child === false) return;
      if (Array.isArray(child)) appendAll(el, child);
      else el.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    });
  }

  function replaceChildren(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
    appendAll(el, Array.prototype.slice.call(arguments, 1));
  }

  /** An icon from the small set below (16x16 strokes, like the Lucide icons Airflow's UI uses). */
  var ICONS = {
    check: '<path d="M20 6 9 17l-5-5"/>',
    x: '<path d="M18 6 6 18M6 6l12 12"/>',
    play: '<path d="M7 4v16l13-8z"/>',
    restart: '<path d="M3 12a9 9 0 1 0 3-6.7L3 8"/><path d="M3 3v5h5"/>',
    clock: '<circle cx="12" cy="12" r="9"/><path d="M12 7v5l3 2"/>',
    pause: '<path d="M9 5v14M15 5v14"/>',
    circle: '<circle cx="12" cy="12" r="8"/>',
    help: '<circle cx="12" cy="12" r="9"/><path d="M9.5 9a2.5 2.5 0 1 1 3.5 2.3c-.6.3-1 .9-1 1.6V14M12 17h.01"/>',
    alert: '<path d="M12 3 2 20h20z"/><path d="M12 10v4M12 17h.01"/>',
    info: '<circle cx="12" cy="12" r="9"/><path d="M12 11v5M12 8h.01"/>',
    ban: '<circle cx="12" cy="12" r="9"/><path d="m5.7 5.7 12.6 12.6"/>',
    copy: '<rect x="9" y="9" width="12" height="12" rx="2"/><path d="M5 15V5a2 2 0 0 1 2-2h10"/>',
    external: '<path d="M14 4h6v6M20 4l-9 9"/><path d="M18 14v5a1 1 0 0 1-1 1H5a1 1 0 0 1-1-1V7a1 1 0 0 1 1-1h5"/>',
    chevron: '<path d="m9 6 6 6-6 6"/>',
    refresh: '<path d="M21 12a9 9 0 1 1-3-6.7L21 8"/><path d="M21 3v5h-5"/>',
    box: '<path d="M21 8 12 3 3 8v8l9 5 9-5z"/><path d="m3 8 9 5 9-5M12 13v8"/>',
  };

  function icon(name) {
    var el = document.createElementNS(SVG_NS, "svg");
    el.setAttribute("viewBox", "0 0 24 24");
    el.setAttribute("fill", name === "play" ? "currentColor" : "none");
    el.setAttribute("stroke", "currentColor");
    el.setAttribute("stroke-width", "2");
    el.setAttribute("stroke-linecap", "round");
    el.setAttribute("stroke-linejoin", "round");
    el.setAttribute("aria-hidden", "true");
    el.setAttribute("focusable", "false");
    el.innerHTML = ICONS[name] || ICONS.circle;
    return el;
  }

  // ------------------------------------------------------------------ colour mode and time zone (Airflow's)

  function parentDocument() {
    try {
      if (window.parent !== window && window.parent.document) return window.parent.document;
    } catch (e) {
      /* not same origin: follow the system's preference */
    }
    return null;
  }

  function storedValue(key) {
    try {
      var raw = window.localStorage.getItem(key);
      if (raw === null) return null;
      try {
        var parsed = JSON.parse(raw); // Airflow's useLocalStorage keeps JSON strings
        return typeof parsed === "string" ? parsed : raw;
      } catch (e) {
        return raw;
      }
    } catch (e) {
      return null;
    }
  }

  /** Airflow 3.3 (next-themes) sets class `dark`/`light` on its <html> and keeps the choice in
   * localStorage `theme` (older Chakra builds: `chakra-ui-color-mode`); "system" follows the OS. */
  function colourMode() {
    var doc = parentDocument();
    if (doc) {
      var classes = doc.documentElement.classList;
      if (classes.contains("dark")) return "dark";
      if (classes.contains("light")) return "light";
    }
    var keys = ["theme", "chakra-ui-color-mode"];
    for (var i = 0; i < keys.length; i++) {
      var value = storedValue(keys[i]);
      if (value === "dark" || value === "light") return value;
    }
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }

  function applyColourMode() {
    var mode = colourMode();
    var root = document.documentElement;
    if (root.classList.contains(mode)) return;
    root.classList.remove("dark", "light");
    root.classList.add(mode);
  }

  function followColourMode() {
    applyColourMode();
    var doc = parentDocument();
    if (doc && window.MutationObserver) {
      new MutationObserver(applyColourMode).observe(doc.documentElement, {
        attributes: true,
        attributeFilter: ["class", "style", "data-theme"],
      });
    }
    window.addEventListener("storage", function () {
      applyColourMode();
      timeZoneCache = null;
    });
    if (window.matchMedia) {
      var query = window.matchMedia("(prefers-color-scheme: dark)");
      if (query.addEventListener) query.addEventListener("change", applyColourMode);
    }
  }

  var timeZoneCache = null;

  /** The time zone chosen in Airflow's user menu (localStorage `timezone`), else the browser's. */
  function timeZone() {
    if (timeZoneCache) return timeZoneCache;
    var zone = storedValue("timezone");
    try {
      if (zone) new Intl.DateTimeFormat("en-US", { timeZone: zone });
    } catch (e) {
      zone = null;
    }
    timeZoneCache = zone || Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
    return timeZoneCache;
  }

  // ------------------------------------------------------------------ formatting

  var formatters = {};

  function parts(date, withZone) {
    var zone = timeZone();
    var key = zone + (withZone ? "|z" : "");
    if (!formatters[key]) {
      var options = {
        timeZone: zone,
        year: "numeric",
        month: "2-digit",
        day: "2-digit",
        hour: "2-digit",
        minute: "2-digit",
        second: "2-digit",
        hourCycle: "h23",
      };
      if (withZone) options.timeZoneName = "short";
      formatters[key] = new Intl.DateTimeFormat("en-US", options);
    }
    var out = {};
    formatters[key].formatToParts(date).forEach(function (p) {
      out[p.type] = p.value;
    });
    return out;
  }

  function toDate(iso) {
    if (!iso) return null;
    var d = new Date(iso);
    return isNaN(d.getTime()) ? null : d;
  }

  /** "2026-12-02 05:01:02", Airflow's own format, in Airflow's chosen time zone. */
  function formatTime(iso, withZone) {
    var d = toDate(iso);
    if (!d) return "—";
    var p = parts(d, withZone);
    var text = p.year + "-" + p.month + "-" + p.day + " " + p.hour + ":" + p.minute + ":" + p.second;
    return withZone && p.timeZoneName ? text + " " + p.timeZoneName : text;
  }

  /** An API word as text: "up_for_retry" -> "up for retry". */
  function words(value) {
    return String(value).replace(/_/g, " ");
  }

  function clockTime(ms, withSeconds) {
    var p = parts(new Date(ms));
    return p.hour + ":" + p.minute + (withSeconds ? ":" + p.second : "");
  }

  function pad2(n) {
    return (n < 10 ? "0" : "") + n;
  }

  /** Durations as Airflow's task pages show them, "HH:mm:ss" (with days: "1d 02:03:04"), in one format for every
   *  row so that a column reads at a glance. */
  function formatDuration(seconds) {
    if (seconds === null || seconds === undefined || isNaN(seconds)) return "—";
    if (seconds < 0) seconds = 0;
    var total = Math.round(seconds);
    var days = Math.floor(total / 86400);
    var rest = total % 86400;
    var hms = pad2(Math.floor(rest / 3600)) + ":" + pad2(Math.floor((rest % 3600) / 60)) + ":" + pad2(rest % 60);
    return days ? days + "d " + hms : hms;
  }

  /** A short span: "45s", "12m", "3h 4m", "2d 3h". */
  function formatSpan(seconds) {
    if (seconds === null || seconds === undefined || isNaN(seconds)) return "—";
    seconds = Math.max(0, Math.round(seconds));
    if (seconds < 60) return seconds + "s";
    var minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes + "m" + (minutes < 10 && seconds % 60 ? " " + (seconds % 60) + "s" : "");
    var hours = Math.floor(minutes / 60);
    if (hours < 48) return hours + "h" + (minutes % 60 ? " " + (minutes % 60) + "m" : "");
    var days = Math.floor(hours / 24);
    return days + "d" + (hours % 24 ? " " + (hours % 24) + "h" : "");
  }

  function ago(iso, nowMs) {
    var d = toDate(iso);
    if (!d) return "—";
    return formatSpan(((nowMs || Date.now()) - d.getTime()) / 1000) + " ago";
  }

  /** <time> with Airflow's format, and the relative age as its tooltip (or the other way round). */
  function timeCell(iso, relative) {
    if (!toDate(iso)) return h("span", { class: "muted", text: "—" });
    var full = formatTime(iso, true);
    return h("time", { datetime: iso, title: relative ? full : ago(iso), "data-rel": relative ? "ago" : null }, relative ? ago(iso) : formatTime(iso));
  }

  /** Bring the "3m ago" / age texts of an unchanged table up to date without rebuilding it. */
  function refreshRelativeTimes(el) {
    var now = Date.now();
    Array.prototype.forEach.call(el.querySelectorAll("time[data-rel]"), function (t) {
      var iso = t.getAttribute("datetime");
      t.textContent = t.getAttribute("data-rel") === "age" ? formatSpan((now - toDate(iso).getTime()) / 1000) : ago(iso, now);
    });
  }

  /** `f`, reporting an exception of its own in `errorEl` (one line) instead of stopping the page's refresh. */
  function guarded(f, errorEl) {
    return function () {
      try {
        f();
      } catch (error) {
        replaceChildren(errorEl, alertBox("error", errorMessage(error)));
        if (window.console) window.console.error(error);
      }
    };
  }

  /** The user is selecting or has selected text inside `el`: a rebuild now would take it away. */
  function selectingIn(el) {
    var selection = window.getSelection ? window.getSelection() : null;
    return !!(selection && !selection.isCollapsed && selection.anchorNode && el.contains(selection.anchorNode));
  }

  var pointerDown = false;
  var afterPointer = [];
  document.addEventListener("pointerdown", function () {
    pointerDown = true;
  }, true);
  document.addEventListener("pointerup", function () {
    pointerDown = false;
    window.setTimeout(function () {
      var queued = afterPointer.splice(0);
      queued.forEach(function (f) {
        f();
      });
    }, 0); // after the click this press makes
  }, true);

  /** Run `f` now, or, while a mouse button is down, right after its click (a rebuild between the press and the
   * release would swallow the click). */
  function whenIdle(f) {
    if (pointerDown) afterPointer.push(f);
    else f();
  }

  /** Rebuild `el` only when `signature` changed (keeps focus, text selection and the element under the pointer). */
  function changed(el, signature) {
    if (el.getAttribute("data-signature") === signature) return false;
    el.setAttribute("data-signature", signature);
    return true;
  }

  // ------------------------------------------------------------------ phases

  /** Job and pod phases -> Airflow's state palettes (and an icon, since colour alone says nothing to some). */
  var PHASE_STYLE = {
    Succeeded: ["success", "check"],
    Complete: ["success", "check"], // a TrainJob's success

    Failed: ["failed", "x"],
    Running: ["running", "play"],
    Scaling: ["running", "play"],
    Restarting: ["restarting", "restart"],
    Queued: ["queued", "clock"],
    Pending: ["queued", "clock"],
    Created: ["scheduled", "circle"],
    Suspended: ["reschedule", "pause"],
    Stopped: ["removed", "x"],
    Gone: ["removed", "x"],
    // an ended try's outcome, when its job did not finish (views.OUTCOME_BADGES)
    Deleted: ["removed", "x"],
    "Timed out": ["failed", "clock"],
    Ended: ["removed", "circle"],
    Unknown: ["none", "help"],
  };

  var PHASE_ORDER = ["Running", "Restarting", "Queued", "Pending", "Created", "Suspended", "Failed", "Succeeded", "Complete", "Unknown"];

  function phaseStyle(phase) {
    return PHASE_STYLE[phase] || ["none", "help"];
  }

  function badge(phase, large) {
    var style = phaseStyle(phase);
    return h(
      "span",
      { class: "badge state-" + style[0] + (large ? " lg" : "") },
      icon(style[1]),
      h("span", { text: phase || "Unknown" })
    );
  }

  /** The job will not change phase again: Succeeded (v1), Complete (a TrainJob) or Failed (both). */
  function isTerminal(phase) {
    return phase === "Succeeded" || phase === "Complete" || phase === "Failed";
  }

  /** What an exit class (failures.ExitClass) means for Airflow's retries, as the replicas table says it. */
  var EXIT_CLASS_TEXT = {
    Permanent: ["permanent", "Exit code 1-127: a permanent failure; Airflow does not retry the task"],
    Retryable: ["retryable", "Exit code 128 or above (killed by a signal): Airflow may retry the task"],
    OOMKilled: ["retryable", "Killed for using too much memory (OOMKilled): Airflow may retry the task"],
    Evicted: ["retryable", "The pod was evicted: Airflow may retry the task"],
    Unknown: ["retryable", "A failure with no exit code and no known reason: Airflow may retry the task"],
  };

  /** "137 Error · retryable": the last exit code, its reason, and its class. */
  function exitCell(r) {
    var known = EXIT_CLASS_TEXT[r.exit_class];
    // OOMKilled and Evicted are reasons as well as classes: named once, when the reason does not say it already
    var named = known && r.exit_class !== r.reason && (r.exit_class === "OOMKilled" || r.exit_class === "Evicted") ? r.exit_class + ", " : "";
    var cls = known ? h("span", { class: "muted", title: known[1], text: " · " + named + known[0] }) : null;
    if (r.exit_code === null || r.exit_code === undefined) {
      if (!r.reason && !cls) return h("span", { class: "muted", text: "—" });
      return h("span", null, r.reason || "no exit code", cls);
    }
    return h("span", null, h("span", { class: r.exit_code === 0 ? "" : "tag failed", text: String(r.exit_code) }), r.reason ? " " + r.reason : "", cls);
  }

  /** The task's judgement of a replica's failure (views.failure_marks, as its error gives it): "first failure" on the
   * run that failed the job, and that run when it is not the last one the table shows. */
  function failureNote(r) {
    var f = r.failure;
    if (!f) return null;
    var same = f.exit_code === r.exit_code && (f.reason || null) === (r.reason || null);
    var first = r.first_failure ? h("span", { class: "tag failed", title: "The failure the task's error names first: it failed the job", text: "first failure" }) : null;
    var earlier = same ? null : h("span", { class: "muted", text: (first ? " " : "") + "failed with " + (f.exit_code === null || f.exit_code === undefined ? "no exit code" : f.exit_code) + (f.reason ? " " + f.reason : "") });
    return first || earlier ? h("div", { class: "failure-note" }, first, earlier) : null;
  }

  // ------------------------------------------------------------------ the API

  function ApiError(status, message) {
    this.status = status;
    this.message = message;
  }

  function describeHttpError(status, detail) {
    var tail = detail ? ": " + detail : ".";
    if (status === 401) return "You are not signed in to Airflow (HTTP 401). Sign in again, then reload this page.";
    if (status === 403) return "You may not read this DAG's task instances (HTTP 403)" + tail;
    if (status === 404) return "Not found (HTTP 404)" + tail;
    if (status === 422 || status === 400) return "The request was not understood (HTTP " + status + ")" + tail;
    if (status >= 500) return "The Airflow API server could not answer (HTTP " + status + ")" + tail;
    return "Unexpected answer from the Airflow API server (HTTP " + status + ")" + tail;
  }

  function detailOf(body) {
    if (!body || body.detail === undefined) return "";
    if (typeof body.detail === "string") return body.detail;
    if (Array.isArray(body.detail)) {
      return body.detail
        .map(function (d) {
          return (d.loc ? d.loc.join(".") + ": " : "") + (d.msg || JSON.stringify(d));
        })
        .join("; ");
    }
    return JSON.stringify(body.detail);
  }

  function getJSON(path, params) {
    var query = Object.keys(params || {})
      .filter(function (k) {
        return params[k] !== null && params[k] !== undefined && params[k] !== "";
      })
      .map(function (k) {
        return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]);
      })
      .join("&");
    var url = API + path + (query ? "?" + query : "");
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" }, cache: "no-store" }).then(
      function (response) {
        if (response.ok) return response.json();
        return response
          .json()
          .catch(function () {
            return null;
          })
          .then(function (body) {
            throw new ApiError(response.status, describeHttpError(response.status, detailOf(body)));
          });
      },
      function (error) {
        throw new ApiError(0, "Could not reach the Airflow API server (" + (error && error.message ? error.message : error) + ").");
      }
    );
  }

  function errorMessage(error) {
    if (error instanceof ApiError) return error.message;
    if (error instanceof SyntaxError) return "The Airflow API server answered with something that is not JSON.";
    return "Something went wrong in this page: " + (error && error.message ? error.message : String(error));
  }

  function alertBox(kind, text, extra) {
    return h(
      "div",
      { class: "alert " + kind, role: kind === "error" ? "alert" : "status" },
      icon(kind === "error" ? "ban" : kind === "warning" ? "alert" : "info"),
      h("div", null, text, extra || null)
    );
  }

  // ------------------------------------------------------------------ leaving the frame

  /** Follow a link from inside Airflow's sandboxed iframe: an anchor made in the parent's document navigates
   * the parent (its node document is the source, which the frame's sandbox does not cover). Without an
   * accessible parent (page opened on its own) the browser's default applies. */
  function followLink(event) {
    var anchor = event.currentTarget;
    var doc = parentDocument();
    if (!doc || event.defaultPrevented || event.button > 1) return;
    var newTab = anchor.target === "_blank" || event.ctrlKey || event.metaKey || event.shiftKey || event.button === 1;
    event.preventDefault();
    var proxy = doc.createElement("a");
    proxy.href = anchor.href; // absolute already: the frame resolved it
    if (newTab) {
      proxy.target = "_blank";
      proxy.rel = "noopener noreferrer";
    }
    proxy.style.display = "none";
    doc.body.appendChild(proxy);
    proxy.click();
    proxy.remove();
  }

  /** Only paths of this site and http(s) URLs become links (never `javascript:` and the like). */
  function safeHref(href) {
    return typeof href === "string" && (/^https?:\/\//i.test(href) || (href.charAt(0) === "/" && href.charAt(1) !== "/"));
  }

  function airflowLink(href, text, extraProps) {
    if (!safeHref(href)) return h("span", { text: text });
    var props = { href: href, target: "_top", onclick: followLink, onauxclick: followLink };
    Object.keys(extraProps || {}).forEach(function (k) {
      props[k] = extraProps[k];
    });
    return h("a", props, text);
  }

  function externalLink(href, text) {
    if (!safeHref(href)) return h("span", { text: text });
    return h(
      "a",
      { href: href, target: "_blank", rel: "noopener noreferrer", onclick: followLink, onauxclick: followLink },
      text,
      " ",
      h("span", { class: "visually-hidden", text: "(opens in a new tab)" })
    );
  }

  // ------------------------------------------------------------------ polling

  /** setTimeout-based polling that pauses while the page is hidden (many open tabs cost the API nothing). */
  function Poller(run) {
    this.run = run;
    this.timer = null;
    this.delay = null;
    var self = this;
    document.addEventListener("visibilitychange", function () {
      if (!document.hidden && self.delay !== null && self.timer === null) self.fire();
    });
  }

  Poller.prototype.schedule = function (seconds) {
    this.cancel();
    this.delay = seconds;
    if (seconds === null || seconds === undefined) return;
    var self = this;
    this.timer = window.setTimeout(function () {
      self.timer = null;
      if (document.hidden) return; // resumed by visibilitychange
      self.fire();
    }, Math.max(1, seconds) * 1000);
  };

  Poller.prototype.fire = function () {
    this.cancel();
    this.run();
  };

  Poller.prototype.cancel = function () {
    if (this.timer !== null) window.clearTimeout(this.timer);
    this.timer = null;
  };

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () {
        return legacyCopy(text);
      });
    }
    return legacyCopy(text);
  }

  function legacyCopy(text) {
    return new Promise(function (resolve, reject) {
      var area = h("textarea", { readonly: true, style: "position:fixed;top:-1000px;opacity:0" });
      area.value = text;
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try {
        ok = document.execCommand("copy");
      } catch (e) {
        ok = false;
      }
      area.remove();
      if (ok) resolve();
      else reject(new Error("copy refused"));
    });
  }

  // ------------------------------------------------------------------ the conditions timeline (SVG)

  var LANE_ORDER = ["Created", "Suspended", "Queued", "Pending", "Running", "Scaling", "Restarting", "Succeeded", "Complete", "Failed"];
  var LANE_STATE = {
    Created: "scheduled",
    Suspended: "reschedule",
    Queued: "queued",
    Pending: "queued",
    Running: "running",
    Scaling: "running",
    Restarting: "restarting",
    Succeeded: "success",
    Complete: "success",
    Failed: "failed",
  };

  // Lanes of restart marks drawn at most (a 64-worker job whose workers all restarted stays readable).
  var MAX_RESTART_LANES = 8;

  function niceStep(spanMs, maxTicks) {
    var steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
    for (var i = 0; i < steps.length; i++) {
      if (spanMs / (steps[i] * 1000) <= maxTicks) return steps[i] * 1000;
    }
    return steps[steps.length - 1] * 1000;
  }

  function cssVar(name) {
    return "var(" + name + ")";
  }

  /** Which transitions start a bar. A true condition does; so does a `Running` the controller turned False
   * when the job ended (kubeflow/common keeps its lastTransitionTime, the time it started running). */
  function timelineSegments(timeline, endMs) {
    var entries = (timeline || [])
      .map(function (t) {
        var d = toDate(t.time);
        return d ? { type: t.type, status: t.status, reason: t.reason, message: t.message, ms: d.getTime() } : null;
      })
      .filter(Boolean)
      .sort(function (a, b) {
        return a.ms - b.ms;
      });
    var endedAt = null;
    entries.forEach(function (e) {
      if (isTerminal(e.type) && e.status === "True") endedAt = e.ms;
    });
    var starts = entries.filter(function (e) {
      if (e.status === "True") return true;
      return e.type === "Running" && endedAt !== null && e.ms <= endedAt;
    });
    var bars = starts.map(function (e, i) {
      var next = i + 1 < starts.length ? starts[i + 1].ms : endMs;
      return { entry: e, from: e.ms, to: Math.max(e.ms, next), active: true };
    });
    // Other False transitions: the condition is off from then on (e.g. Suspended False = resumed).
    var offs = entries
      .filter(function (e) {
        return starts.indexOf(e) < 0;
      })
      .map(function (e) {
        return { entry: e, from: e.ms, to: Math.max(e.ms, endMs), active: false };
      });
    return { entries: entries, bars: bars.concat(offs) };
  }

  /**
   * Draw the timeline of one try: a lane per condition type, a bar from each transition to the next (or to
   * now while the job runs), a lane per replica that restarted with a mark at each restart, a time axis.
   * @param {object} tr one try of the task-instance answer.
   * @param {number} width pixels.
   * @param {number} nowMs the time "now" is drawn at.
   */
  function drawTimeline(tr, width, nowMs) {
    var finished = tr.refresh_seconds === null || tr.refresh_seconds === undefined || isTerminal(tr.phase) || !tr.exists;
    var times = [];
    (tr.timeline || []).forEach(function (t) {
      var d = toDate(t.time);
      if (d) times.push(d.getTime());
    });
    (tr.restarts || []).forEach(function (r) {
      var d = toDate(r.time);
      if (d) times.push(d.getTime());
    });
    [tr.created_at, tr.start_time, tr.completion_time].forEach(function (iso) {
      var d = toDate(iso);
      if (d) times.push(d.getTime());
    });
    if (!times.length) return null;
    // A job that stopped short of Succeeded/Failed was in its last phase until what is known of it ends (the try's
    // end, the last sight, the deletion): its last bar runs to there, not to its own transition.
    var known = finished && !isTerminal(tr.phase) ? toDate(tr.known_until) : null;
    var knownMs = known ? Math.max(known.getTime(), Math.max.apply(null, times)) : null;
    if (knownMs !== null) times.push(knownMs);
    var t0 = Math.min.apply(null, times);
    var tEnd = finished ? Math.max.apply(null, times) : Math.max(nowMs, Math.max.apply(null, times));
    if (tEnd - t0 < 1000) tEnd = t0 + 1000;
    // a finished job's last condition (Succeeded/Failed) gets a little room to be seen in
    var t1 = finished ? tEnd + (tEnd - t0) * 0.03 : tEnd;

    var seg = timelineSegments(tr.timeline, knownMs !== null ? knownMs : t1);
    var laneTypes = [];
    LANE_ORDER.forEach(function (type) {
      if (seg.entries.some(function (e) {
        return e.type === type;
      }))
        laneTypes.push(type);
    });
    seg.entries.forEach(function (e) {
      if (laneTypes.indexOf(e.type) < 0) laneTypes.push(e.type);
    });
    var restartLanes = [];
    (tr.restarts || []).forEach(function (r) {
      if (r.replica && restartLanes.indexOf(r.replica) < 0) restartLanes.push(r.replica);
    });
    restartLanes = restartLanes.slice(0, MAX_RESTART_LANES); // the first to restart; the table lists them all

    var labelW = 132;
    var rightPad = 16;
    var laneH = 26;
    var barH = 16;
    var top = 8;
    var axisH = 28;
    var lanes = laneTypes.length + restartLanes.length;
    if (!lanes) return null;
    var height = top + lanes * laneH + axisH;
    var plotW = Math.max(120, width - labelW - rightPad);
    var x = function (ms) {
      return labelW + ((ms - t0) / (t1 - t0)) * plotW;
    };

    var desc = [];
    var svg = s("svg", {
      class: "timeline",
      width: width,
      height: height,
      viewBox: "0 0 " + width + " " + height,
      role: "img",
      "aria-labelledby": "timeline-title timeline-desc",
    });
    svg.appendChild(s("title", { id: "timeline-title", text: "Conditions of " + (tr.kind || "the job") + " " + (tr.name || "") + " over time" }));
    var descEl = s("desc", { id: "timeline-desc" });
    svg.appendChild(descEl);

    // grid and axis
    var step = niceStep(t1 - t0, Math.max(2, Math.floor(plotW / 90)));
    var withSeconds = step < 60000;
    var axisY = top + lanes * laneH + 4;
    var axis = s("g", { class: "axis", "aria-hidden": "true" });
    axis.appendChild(s("line", { x1: labelW, x2: labelW + plotW, y1: axisY, y2: axisY }));
    var first = Math.ceil(t0 / step) * step;
    for (var t = first; t <= t1; t += step) {
      var tx = x(t);
      svg.appendChild(s("line", { class: "grid", x1: tx, x2: tx, y1: top, y2: axisY, "aria-hidden": "true" }));
      axis.appendChild(s("line", { x1: tx, x2: tx, y1: axisY, y2: axisY + 4 }));
      axis.appendChild(s("text", { x: tx, y: axisY + 17, "text-anchor": "middle", text: clockTime(t, withSeconds) }));
    }
    svg.appendChild(axis);

    // lanes
    laneTypes.forEach(function (type, i) {
      var y = top + i * laneH;
      svg.appendChild(s("rect", { class: "lane-bg", x: labelW, y: y + (laneH - barH) / 2, width: plotW, height: barH, rx: 3 }));
      svg.appendChild(s("text", { class: "lane-label", x: 0, y: y + laneH / 2 + 4, text: type }));
    });
    restartLanes.forEach(function (replica, i) {
      var y = top + (laneTypes.length + i) * laneH;
      svg.appendChild(s("rect", { class: "lane-bg", x: labelW, y: y + (laneH - barH) / 2, width: plotW, height: barH, rx: 3 }));
      svg.appendChild(s("text", { class: "lane-label", x: 0, y: y + laneH / 2 + 4, text: replica + " restarts" }));
    });

    seg.bars
      .slice()
      .sort(function (a, b) {
        return a.active - b.active; // inactive first, so active bars draw on top
      })
      .forEach(function (bar) {
        var lane = laneTypes.indexOf(bar.entry.type);
        var y = top + lane * laneH;
        var bx = x(bar.from);
        var bw = Math.max(bar.active ? 4 : 2, x(bar.to) - bx);
        if (bx + bw > labelW + plotW + 2) bw = labelW + plotW + 2 - bx;
        var state = LANE_STATE[bar.entry.type] || "none";
        var span = (bar.to - bar.from) / 1000;
        var tip =
          bar.entry.type +
          " " +
          bar.entry.status +
          " from " +
          formatTime(new Date(bar.from).toISOString()) +
          (bar.active && !(finished && bar.to >= t1) ? " for " + formatSpan(span) : "") +
          (bar.entry.reason ? " — " + bar.entry.reason : "") +
          (bar.entry.message ? ": " + bar.entry.message : "");
        desc.push(tip);
        var g = s("g", { class: "seg" });
        g.appendChild(s("title", { text: tip }));
        if (bar.active) {
          g.appendChild(
            s("rect", {
              x: bx,
              y: y + (laneH - barH) / 2,
              width: bw,
              height: barH,
              rx: 3,
              fill: cssVar("--" + state + "-solid"),
            })
          );
          var closing = finished && bar.to >= t1 && isTerminal(bar.entry.type);
          var label = formatSpan(span);
          if (closing) {
            // its length is only the room given above: say when it happened instead
            g.appendChild(
              s("text", { class: "lane-label", x: bx - 6, y: y + laneH / 2 + 4, "text-anchor": "end", text: "at " + clockTime(bar.from, true) })
            );
          } else if (bw > label.length * 7 + 12) {
            g.appendChild(s("text", { class: "bar-text", x: bx + 6, y: y + laneH / 2 + 4, text: label }));
          }
        } else {
          g.appendChild(s("rect", { class: "lane-false", x: bx, y: y + laneH / 2 - 2, width: bw, height: 4, rx: 2 }));
          g.appendChild(s("rect", { x: bx, y: y + (laneH - barH) / 2, width: 2, height: barH, fill: cssVar("--none-solid") }));
        }
        svg.appendChild(g);
      });

    (tr.restarts || []).forEach(function (r) {
      var d = toDate(r.time);
      var lane = restartLanes.indexOf(r.replica);
      if (!d || lane < 0) return;
      var cx = x(d.getTime());
      var cy = top + (laneTypes.length + lane) * laneH + laneH / 2;
      var tip =
        r.replica +
        " restarted at " +
        formatTime(r.time) +
        (r.exit_code !== null && r.exit_code !== undefined ? ", exit code " + r.exit_code : "") +
        (r.reason ? " (" + r.reason + ")" : "");
      desc.push(tip);
      var g = s("g", { class: "seg" });
      g.appendChild(s("title", { text: tip }));
      g.appendChild(s("rect", { class: "restart-mark", x: cx - 5, y: cy - 5, width: 10, height: 10, transform: "rotate(45 " + cx + " " + cy + ")" }));
      svg.appendChild(g);
    });

    if (!finished) {
      var nx = x(nowMs);
      var now = s("g", { class: "now", "aria-hidden": "true" });
      now.appendChild(s("line", { x1: nx, x2: nx, y1: top - 4, y2: axisY }));
      svg.appendChild(now);
    }
    descEl.textContent = desc.join(". ") + ".";
    return svg;
  }

  function timelineLegend(tr) {
    var items = [];
    items.push(h("span", null, h("i", { style: "background:var(--lane-false)" }), "condition false"));
    if ((tr.restarts || []).length) {
      items.push(h("span", null, h("i", { class: "mark" }), "replica restart (hover for exit code)"));
      var replicasRestarted = {};
      tr.restarts.forEach(function (r) {
        replicasRestarted[r.replica] = true;
      });
      var more = Object.keys(replicasRestarted).length - MAX_RESTART_LANES;
      if (more > 0) items.push(h("span", null, "+" + more + " more replicas restarted (see the table)"));
    } else {
      items.push(h("span", null, "No replica restarts"));
    }
    return h("div", { class: "legend", "aria-hidden": "true" }, items);
  }

  // ------------------------------------------------------------------ a TrainJob's progress (trainerStatus)

  /** A time left as people say it: "45 s", "about 1 min", "2 h 5 min" (whole minutes past a minute). */
  function leftWords(seconds) {
    seconds = Math.max(0, Math.round(seconds));
    if (seconds < 60) return seconds + " s";
    var minutes = Math.round(seconds / 60);
    if (minutes < 60) return minutes + " min";
    return Math.floor(minutes / 60) + " h" + (minutes % 60 ? " " + (minutes % 60) + " min" : "");
  }

  /** "42% · about 2 min left": the trainer's progress percentage and estimated remaining time, as far as reported (no
   * time left once the job has finished: the trainer's last estimate is no longer one). */
  function progressText(p, finished) {
    var said = [];
    if (typeof p.percentage === "number") said.push(p.percentage + "%");
    if (typeof p.estimated_remaining_seconds === "number" && !finished) said.push("about " + leftWords(p.estimated_remaining_seconds) + " left");
    return said.join(" · ");
  }

  function progressBar(p) {
    if (typeof p.percentage !== "number") return null;
    var pct = Math.max(0, Math.min(100, p.percentage));
    return h(
      "span",
      {
        class: "progress",
        role: "progressbar",
        "aria-label": "Training progress",
        "aria-valuemin": "0",
        "aria-valuemax": "100",
        "aria-valuenow": String(pct),
        "aria-valuetext": pct + "% done",
        title: pct + "% done",
      },
      h("span", { class: "progress-fill", style: "width:" + pct + "%" })
    );
  }

  /** The metrics the trainer reported, as it last reported them: one row per metric. */
  function latestMetricsTable(metrics) {
    return h(
      "table",
      { class: "table metrics" },
      h("caption", { class: "visually-hidden", text: "Training metrics the trainer reported" }),
      h("thead", null, h("tr", null, h("th", { scope: "col", text: "Metric" }), h("th", { scope: "col", text: "Value" }))),
      h(
        "tbody",
        null,
        metrics.map(function (m) {
          return h("tr", null, h("td", { class: "mono", text: m.name }), h("td", { class: "mono", text: m.value === null ? "—" : m.value }));
        })
      )
    );
  }

  /** The metrics over time (the try's progress points, oldest first): one row per report, one column per metric
   * name (in the order first reported), with the percentage and the time left then. */
  function metricsOverTime(history) {
    var names = [];
    history.forEach(function (point) {
      Object.keys(point.metrics || {}).forEach(function (name) {
        if (names.indexOf(name) < 0) names.push(name);
      });
    });
    var cell = function (value) {
      return h("td", { class: "mono num", text: value === null || value === undefined ? "—" : String(value) });
    };
    return h(
      "div",
      { class: "metrics-over-time" },
      h(
        "table",
        { class: "table metrics history" },
        h("caption", { text: "Metrics over time (" + history.length + " report" + (history.length === 1 ? "" : "s") + ")" }),
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            h("th", { scope: "col", text: "Reported" }),
            h("th", { scope: "col", text: "Progress" }),
            h("th", { scope: "col", text: "Time left" }),
            names.map(function (name) {
              return h("th", { scope: "col", class: "mono", text: name });
            })
          )
        ),
        h(
          "tbody",
          null,
          history.map(function (point) {
            var left = point.estimated_remaining_seconds;
            return h(
              "tr",
              null,
              h("th", { scope: "row", class: "nowrap", text: formatTime(point.at) }),
              cell(typeof point.percentage === "number" ? point.percentage + "%" : null),
              cell(typeof left === "number" ? leftWords(left) : null),
              names.map(function (name) {
                return cell((point.metrics || {})[name]);
              })
            );
          })
        )
      )
    );
  }

  /** The tab's progress: the bar, the time left, when the trainer last reported, and the metrics: over time when
   * the try kept its reports, else as last reported. */
  function progressView(p, finished, history) {
    var metrics = p.metrics || [];
    history = history || [];
    return h(
      "div",
      { class: "progress-view" },
      h("div", { class: "progress-line" }, progressBar(p), h("span", { class: "progress-text", text: progressText(p, finished) || "No progress reported yet" })),
      toDate(p.last_updated_time) ? h("span", { class: "muted progress-updated", text: "Last reported " + formatTime(p.last_updated_time) }) : null,
      history.length ? metricsOverTime(history) : metrics.length ? latestMetricsTable(metrics) : null
    );
  }

  // ------------------------------------------------------------------ task instance tab

  function taskInstancePage() {
    var query = new URLSearchParams(window.location.search);
    var ti = {
      dag_id: query.get("dag_id") || "",
      run_id: query.get("run_id") || "",
      task_id: query.get("task_id") || "",
      // Airflow leaves "{MAP_INDEX}" in the tab's URL for a task that is not mapped
      map_index: /^-?\d+$/.test(query.get("map_index") || "") ? query.get("map_index") : "-1",
    };
    var state = {
      data: null,
      error: null,
      tryNumber: query.get("try_number") ? Number(query.get("try_number")) : null, // null: follow the latest
      replica: null, // "Master-0": the replica whose log is shown (null: the lead)
      tailLines: 200,
      updatedAt: null,
      logFor: null,
    };
    var root = document.getElementById("app");
    var parts = {};
    var poller = new Poller(load);
    var logPoller = new Poller(loadLog);

    function build() {
      parts.error = h("div");
      parts.header = h("div", { class: "page-header" });
      parts.notice = h("div");
      parts.summary = h("section", { class: "section", "aria-labelledby": "summary-h" });
      parts.timeline = h("section", { class: "section", "aria-labelledby": "timeline-h" });
      parts.replicas = h("section", { class: "section", "aria-labelledby": "replicas-h" });
      parts.log = h("section", { class: "section", "aria-labelledby": "log-h" });
      parts.events = h("section", { class: "section", "aria-labelledby": "events-h" });
      parts.manifest = h("details", { class: "section", id: "manifest" });
      parts.main = h("div", null, parts.notice, parts.summary, parts.timeline, parts.replicas, parts.log, parts.events, parts.manifest);
      replaceChildren(root, parts.error, parts.header, parts.main);
      buildLog();
      if (window.ResizeObserver) {
        var lastWidth = 0;
        new ResizeObserver(function () {
          var w = parts.timeline.clientWidth;
          if (Math.abs(w - lastWidth) > 4 && state.data) {
            lastWidth = w;
            renderTimeline(currentTry());
          }
        }).observe(parts.timeline);
      }
    }

    function currentTry() {
      var tries = (state.data && state.data.tries) || [];
      if (!tries.length) return null;
      if (state.tryNumber !== null) {
        for (var i = 0; i < tries.length; i++) if (tries[i].try_number === state.tryNumber) return tries[i];
      }
      return tries[0];
    }

    function load() {
      return getJSON("task-instance", ti).then(
        function (data) {
          state.data = data;
          state.error = null;
          state.updatedAt = Date.now();
          var next = (data.tries || [])
            .map(function (t) {
              return t.refresh_seconds;
            })
            .filter(function (v) {
              return typeof v === "number" && v > 0;
            });
          poller.schedule(next.length ? Math.min.apply(null, next) : null);
          whenIdle(guarded(render, parts.error));
        },
        function (error) {
          state.error = errorMessage(error);
          renderError();
          renderStatus();
          if (!state.data) {
            parts.main.hidden = true;
            parts.header.removeAttribute("data-signature");
            replaceChildren(parts.header);
          }
          // a transient failure retries; a refusal (401/403) or a bad request will not get better by itself
          var again = error instanceof ApiError && (error.status === 0 || error.status >= 500);
          poller.schedule(again ? 10 : null);
        }
      );
    }

    function renderError() {
      replaceChildren(parts.error, state.error ? alertBox("error", state.error) : null);
    }

    function render() {
      renderError();
      var tr = currentTry();
      if (!tr) {
        parts.main.hidden = true;
        parts.header.removeAttribute("data-signature");
        replaceChildren(
          parts.header,
          h(
            "div",
            { class: "empty", style: "width:100%" },
            icon("box"),
            h("div", { class: "title", text: "This task instance launched no training job" }),
            h("div", { text: "Training jobs appear here once a try of " + ti.task_id + " creates one." })
          )
        );
        return;
      }
      parts.main.hidden = false;
      renderHeader(tr);
      renderNotice(tr);
      renderSummary(tr);
      renderTimeline(tr);
      renderReplicas(tr);
      renderEvents(tr);
      renderManifest(tr);
      var replica = selectedReplica(tr);
      var key = tr.try_number + "/" + (replica ? replica.pod : "");
      if (state.logFor !== key) {
        state.logFor = key;
        loadLog(true);
      } else if (logPoller.delay === null && replica && tr.refresh_seconds) {
        logPoller.schedule(tr.refresh_seconds); // the pod started running since the last read
      }
    }

    function renderHeader(tr) {
      var tries = state.data.tries;
      var selector = null;
      if (tries.length > 1 && tries.length <= 6) {
        selector = h(
          "div",
          { class: "btn-group", role: "group", "aria-label": "Try" },
          tries.map(function (t, i) {
            var shown = t.badge || t.phase;
            var style = phaseStyle(shown);
            return h(
              "button",
              {
                type: "button",
                class: "btn state-" + style[0],
                "aria-pressed": t === tr ? "true" : "false",
                title: "Try " + t.try_number + ": " + (shown || "Unknown"),
                onclick: function () {
                  selectTry(i === 0 ? null : t.try_number);
                },
              },
              h("span", { class: "dot", "aria-hidden": "true" }),
              "Try " + t.try_number,
              h("span", { class: "visually-hidden", text: ", " + (shown || "Unknown") })
            );
          })
        );
      } else if (tries.length > 6) {
        selector = h(
          "label",
          { class: "field" },
          "Try",
          h(
            "select",
            {
              class: "input",
              onchange: function (e) {
                var n = Number(e.target.value);
                selectTry(n === tries[0].try_number ? null : n);
              },
            },
            tries.map(function (t) {
              var option = h("option", { value: t.try_number }, "Try " + t.try_number + " — " + (t.badge || t.phase || "Unknown"));
              option.selected = t === tr;
              return option;
            })
          )
        );
      }
      var status = statusLine(tr);
      var signature = JSON.stringify([
        tries.map(function (t) {
          return [t.try_number, t.badge || t.phase];
        }),
        tr.try_number,
        tr.badge || tr.phase,
        tr.kind,
        tr.name,
        tr.link,
      ]);
      if (!changed(parts.header, signature) && parts.headerStatus) {
        replaceChildren(parts.headerStatus, status);
        return;
      }
      parts.headerStatus = h("span", null, status);
      replaceChildren(
        parts.header,
        h("h1", null, badge(tr.badge || tr.phase, true), h("span", null, tr.kind + " "), h("span", { class: "mono", text: tr.name })),
        h("div", { class: "spacer" }),
        selector,
        tr.link ? h("span", null, externalLink(tr.link, "Kubeflow dashboard"), " ") : null,
        parts.headerStatus
      );
      var a = tr.link ? parts.header.querySelector("a") : null;
      if (a) {
        a.insertBefore(icon("external"), a.firstChild);
        a.classList.add("btn");
      }
    }

    /** The header's "Live · refreshes every 5 s · 10:01:02", or what stands in its way: the cluster cannot be read
     * (since when), the tab is hidden (polling paused), the last poll failed. */
    function statusLine(tr) {
      var updated = " · updated " + clockTime(state.updatedAt, true);
      var down = toDate(tr.cluster_unreadable_since);
      if (document.hidden && tr.refresh_seconds) {
        return h("span", { class: "status-line" }, "Paused while the tab is hidden" + updated);
      }
      if (state.error) {
        return h("span", { class: "status-line" }, icon("alert"), " Not updated: the last refresh failed" + updated);
      }
      if (tr.try_ended) {
        var ended = toDate(tr.airflow_ended_at) || toDate(tr.ended_at);
        return h(
          "span",
          { class: "status-line" },
          "Try ended" + (ended ? " " + clockTime(ended.getTime(), true) : "") + (tr.airflow_state ? " · Airflow: " + words(tr.airflow_state) : ""),
          tr.refresh_seconds ? " · waiting for the task's record of its end" : "",
          updated
        );
      }
      if (down) {
        return h(
          "span",
          { class: "status-line", title: "Showing the last state seen; the page reads the cluster again every " + tr.refresh_seconds + " s" },
          icon("alert"),
          " Cluster unreadable since " + clockTime(down.getTime(), true) + " · retrying every " + tr.refresh_seconds + " s"
        );
      }
      var live = !!tr.refresh_seconds;
      return h(
        "span",
        { class: "status-line" },
        live ? h("span", { class: "live-dot", "aria-hidden": "true" }) : null,
        live ? "Live · refreshes every " + tr.refresh_seconds + " s" : "Updated",
        " · " + clockTime(state.updatedAt, true)
      );
    }

    function renderStatus() {
      var tr = currentTry();
      if (tr && parts.headerStatus) replaceChildren(parts.headerStatus, statusLine(tr));
    }

    document.addEventListener("visibilitychange", renderStatus);

    function selectTry(number) {
      state.tryNumber = number;
      state.replica = null;
      render();
    }

    /** What the tab shows of the job, in words (views.chosen_sight: who saw it). */
    function sightText(tr) {
      if (tr.seen_by === "trigger") return "what the trigger saw when Airflow stopped the task";
      if (tr.seen_by === "task") return tr.ended_at ? "what the task recorded at its end" : "what the task last saw while it ran";
      if (tr.seen_by === "page") return "the job as this page last saw it";
      if (tr.seen_by === "cluster") return "the job as it is now";
      return null;
    }

    /** How the try ended, in words: the task's record of its end, else Airflow's state of the try. */
    function endText(tr) {
      var when = tr.ended_at || tr.airflow_ended_at;
      var how = tr.outcome ? words(tr.outcome) : tr.airflow_state ? "Airflow: " + words(tr.airflow_state) : "";
      var text = " The try ended" + (when ? " at " + formatTime(when) : "") + (how ? " (" + how + ")" : "");
      if (tr.ended_at) return text + "; pods and events are as they were then.";
      return text + (tr.refresh_seconds ? "; waiting for the task's record of its end." : "; it recorded no end of its own.") + (tr.seen_at ? " Last seen at " + formatTime(tr.seen_at) + "." : "");
    }

    function renderNotice(tr) {
      var notes = [];
      var sight = sightText(tr);
      if (!tr.exists) {
        var detail = tr.try_ended || tr.ended_at
          ? endText(tr)
          : tr.refresh_seconds
            ? " The try has not ended: the job may still appear."
            : "";
        var title = sight ? "This job no longer exists — showing " + sight + "." : "This job no longer exists, and nothing recorded its last state.";
        notes.push(alertBox("info", title, h("span", { class: "muted", text: detail })));
      } else if (tr.try_ended && !isTerminal(tr.phase)) {
        notes.push(
          alertBox(
            "info",
            "This try has ended — showing " + (sight || "the job") + ".",
            h("span", { class: "muted", text: endText(tr) + " The job is still in the cluster: being deleted, or followed by a later try." })
          )
        );
      } else if (tr.source === "recorded" && !tr.error) {
        notes.push(alertBox("warning", "The cluster could not be read just now — showing what the task recorded."));
      }
      if (tr.error) {
        notes.push(alertBox("warning", "Reading the cluster failed: " + tr.error + (tr.source === "recorded" ? " — showing what the task recorded." : "")));
      }
      if (tr !== state.data.tries[0]) {
        notes.push(
          alertBox("info", "You are looking at try " + tr.try_number + "; the latest is try " + state.data.tries[0].try_number + ".")
        );
      }
      replaceChildren(parts.notice, notes);
    }

    function item(label, value, wide) {
      return h("div", { class: wide ? "wide" : null }, h("dt", { text: label }), h("dd", null, value));
    }

    function renderSummary(tr) {
      var condition =
        tr.reason || tr.message
          ? h(
              "div",
              { class: "condition-line" },
              badge(tr.phase),
              tr.reason ? h("span", { class: "reason", text: tr.reason }) : null,
              tr.message ? h("span", { text: tr.message }) : null
            )
          : h("div", { class: "condition-line" }, badge(tr.phase), h("span", { class: "muted", text: tr.try_ended && !tr.timeline.length ? "No condition seen" : "No condition reported yet" }));
      if (tr.try_ended && !isTerminal(tr.phase) && tr.seen_by && tr.seen_by !== "cluster") {
        condition.appendChild(h("span", { class: "muted", text: "as last seen" + (tr.seen_at ? " " + formatTime(tr.seen_at) : "") }));
      }
      var down = toDate(tr.cluster_unreadable_since);
      var existence = down
        ? h(
            "span",
            null,
            h("strong", { text: "Cannot be read right now" }),
            " (since " + formatTime(tr.cluster_unreadable_since) + ") — " + (tr.source === "recorded" ? "showing what the task recorded" : "showing the job as last seen")
          )
        : tr.exists
          ? h("span", null, "Still exists", tr.source === "live" ? h("span", { class: "muted", text: " (read from the cluster)" }) : null)
          : h("span", null, h("strong", { text: "No longer exists" }), sightText(tr) ? " — showing " + sightText(tr) : "");
      var when = toDate(tr.created_at) ? formatTime(tr.created_at) : null;
      // the job's own creation time; the record's created_at of a try that attached is when it attached
      var made = toDate(tr.job_created_at) ? formatTime(tr.job_created_at) : null;
      var attachedAt = toDate(tr.attached_at) ? formatTime(tr.attached_at) : null;
      var origin = tr.reused_from_try
        ? "Did not train again: returned the success of try " + tr.reused_from_try + "'s job" + (when ? " (at " + when + ")" : "")
        : tr.attached
        ? "Followed a job an earlier try created" +
          (made ? " (created " + made + (attachedAt ? ", attached " + attachedAt : "") + ")" : attachedAt ? " (attached " + attachedAt + ")" : "")
        : "Created by try " + tr.try_number + (made ? " at " + made : "") + (attachedAt ? ", attached " + attachedAt : "");
      replaceChildren(
        parts.summary,
        h("h2", { id: "summary-h", text: "Summary" }),
        h(
          "div",
          { class: "section-body" },
          h(
            "dl",
            { class: "summary" },
            item("Phase", condition, true),
            item("Kind", tr.kind),
            item("Namespace", h("span", { class: "mono", text: tr.namespace })),
            item("Name", h("span", { class: "mono", text: tr.name })),
            item("UID", tr.uid ? h("span", { class: "mono", text: tr.uid }) : h("span", { class: "muted", text: "not known yet" })),
            item("Started", timeCell(tr.start_time)),
            item("Completed", timeCell(tr.completion_time)),
            item("Duration", h("span", { text: formatDuration(tr.duration_seconds) })),
            tr.steps ? null : item("Replicas", replicaCounts(tr)),
            tr.runtime ? item("Runtime", h("span", { class: "mono", text: tr.runtime })) : null,
            tr.steps ? item("Nodes", h("span", { text: tr.nodes === null || tr.nodes === undefined ? "as the runtime says" : String(tr.nodes) })) : null,
            tr.steps ? item("Steps", stepCounts(tr), true) : null,
            tr.progress ? item("Progress", progressView(tr.progress, isTerminal(tr.phase), tr.progress_history), true) : null,
            item("In the cluster", existence),
            item("Try", origin),
            item("Try state", tryState(tr)),
            item("Connection", h("span", { class: "mono", text: tr.kubernetes_conn_id || "—" }))
          )
        )
      );
    }

    /** Airflow's state of the try, as its task instance (or its history) has it. */
    function tryState(tr) {
      if (!tr.airflow_state) return h("span", { class: "muted", text: tr.try_ended ? "Ended" : "—" });
      var ended = tr.try_ended && toDate(tr.airflow_ended_at);
      return h("span", null, words(tr.airflow_state), ended ? h("span", { class: "muted", text: " (ended " + formatTime(tr.airflow_ended_at) + ")" }) : null);
    }

    function replicaCounts(tr) {
      var counts = tr.replica_counts || {};
      var types = Object.keys(counts);
      if (!types.length) return h("span", { class: "muted", text: "—" });
      return h(
        "span",
        null,
        types.map(function (type) {
          var c = counts[type] || {};
          // the task log's wording (conditions.replica_count_parts): once the job is terminal only what finished
          return h("span", { style: "display:block" }, h("strong", { text: type }), " " + (c.text || "—"));
        })
      );
    }

    /** A TrainJob's steps (views.steps: its jobsStatus), each with its child Jobs' counts in the task log's words. */
    function stepCounts(tr) {
      if (!tr.steps.length) return h("span", { class: "muted", text: "No step reported yet" });
      return h(
        "span",
        null,
        tr.steps.map(function (step) {
          var nodes = step.nodes === null || step.nodes === undefined ? "" : " (" + step.nodes + (step.nodes === 1 ? " node)" : " nodes)");
          return h("span", { style: "display:block" }, h("strong", { text: step.name }), nodes + " " + (step.text || "—"));
        })
      );
    }

    function renderTimeline(tr) {
      if (!tr) return;
      var width = Math.max(320, (parts.timeline.clientWidth || root.clientWidth || 900) - 26);
      var svg = drawTimeline(tr, width, Date.now());
      replaceChildren(
        parts.timeline,
        h("h2", { id: "timeline-h", text: "Conditions over time" }),
        h(
          "div",
          { class: "section-body" },
          svg ? [svg, timelineLegend(tr)] : h("div", { class: "muted", text: "The job has reported no conditions yet." })
        )
      );
    }

    function replicaKey(r) {
      return r.replica_type + "-" + r.index;
    }

    function selectedReplica(tr) {
      var replicas = tr.replicas || [];
      var chosen = null;
      replicas.forEach(function (r) {
        if (state.replica && replicaKey(r) === state.replica) chosen = r;
      });
      if (chosen) return chosen;
      for (var i = 0; i < replicas.length; i++) if (replicas[i].lead) return replicas[i];
      return replicas[0] || null;
    }

    function chooseReplica(r) {
      state.replica = replicaKey(r);
      render();
    }

    var PODS_GONE = "The job has finished and its pods are gone (removed by its cleanPodPolicy or the controller).";
    var STEP_PODS_GONE = "The job has finished and its pods are gone (removed by the JobSet controller).";

    /** A TrainJob's pods table: the rows (in the table's order) under a heading row per step, with its counts. */
    function byStep(tr, replicas, rows) {
      var counts = {};
      tr.steps.forEach(function (step) {
        counts[step.name] = step;
      });
      var out = [];
      replicas.forEach(function (r, i) {
        if (i === 0 || replicas[i - 1].replica_type !== r.replica_type) {
          var step = counts[r.replica_type];
          out.push(
            h(
              "tr",
              { class: "group" },
              h("th", { scope: "rowgroup", colspan: "7" }, h("span", { text: r.replica_type }), step && step.text ? h("span", { class: "muted", text: " · " + step.text }) : null)
            )
          );
        }
        out.push(rows[i]);
      });
      return out;
    }

    function renderReplicas(tr) {
      var replicas = tr.replicas || [];
      var chosen = selectedReplica(tr);
      if (!changed(parts.replicas, JSON.stringify([tr.try_number, tr.exists, replicas, chosen && replicaKey(chosen), tr.steps]))) {
        refreshRelativeTimes(parts.replicas);
        return;
      }
      var focused = document.activeElement && document.activeElement.getAttribute("data-replica");
      var body;
      if (!replicas.length) {
        body = h("div", { class: "section-body muted", text: tr.pods_gone ? (tr.steps ? STEP_PODS_GONE : PODS_GONE) : tr.exists ? "No pods yet." : "The task recorded no pods." });
      } else {
        var rows = replicas.map(function (r) {
          var key = replicaKey(r);
          var selected = chosen === r;
          var exit = exitCell(r);
          return h(
            "tr",
            {
              class: "selectable",
              tabindex: "0",
              "data-replica": key,
              "aria-current": selected ? "true" : null,
              title: "Show the log of " + key,
              onclick: function () {
                chooseReplica(r);
              },
              onkeydown: function (e) {
                if (e.key === "Enter" || e.key === " ") {
                  e.preventDefault();
                  chooseReplica(r);
                } else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
                  e.preventDefault();
                  var next = e.key === "ArrowDown" ? "nextElementSibling" : "previousElementSibling";
                  var sibling = e.currentTarget[next];
                  while (sibling && !sibling.hasAttribute("data-replica")) sibling = sibling[next]; // past a step's heading
                  if (sibling) sibling.focus();
                }
              },
            },
            h(
              "td",
              { class: "nowrap" },
              h("strong", { text: key }),
              r.lead ? h("span", null, " ", h("span", { class: "tag", text: "lead" })) : null,
              selected ? h("span", { class: "visually-hidden", text: " (log shown below)" }) : null
            ),
            h("td", null, h("span", { class: "mono", text: r.pod || "—" }), r.gone && tr.exists ? h("span", { class: "muted", text: " · gone", title: "Removed since; shown as the task recorded it" }) : null),
            h("td", null, r.phase ? badge(r.phase) : h("span", { class: "muted", text: "—" })),
            h("td", { class: "num" }, h("span", { class: r.restarts ? "tag warning" : "", text: String(r.restarts || 0) })),
            h("td", null, exit, failureNote(r)),
            h("td", null, h("span", { class: "mono", text: r.node || "—" })),
            h(
              "td",
              { class: "nowrap" },
              typeof r.age_seconds === "number"
                ? h("span", { title: "Age when the task recorded it (" + formatTime(r.created_at, true) + ")", text: formatSpan(r.age_seconds) })
                : !tr.exists || r.gone
                  ? h("span", { class: "muted", text: "—" })
                  : toDate(r.created_at)
                ? h("time", {
                    datetime: r.created_at,
                    "data-rel": "age",
                    title: formatTime(r.created_at, true),
                    text: formatSpan((Date.now() - toDate(r.created_at).getTime()) / 1000),
                  })
                : "—"
            )
          );
        });
        body = h(
          "div",
          { class: "section-body flush" },
          h(
            "table",
            { class: "table" },
            h("caption", { class: "visually-hidden", text: "Replicas of " + tr.name + "; select a row to show its log" }),
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                ["Replica", "Pod", "Phase", "Restarts", "Last exit", "Node", "Age"].map(function (label) {
                  return h("th", { scope: "col", class: label === "Restarts" ? "num" : null, text: label });
                })
              )
            ),
            h("tbody", null, tr.steps ? byStep(tr, replicas, rows) : rows)
          )
        );
      }
      replaceChildren(
        parts.replicas,
        h(
          "div",
          { class: "section-head" },
          h("h2", { id: "replicas-h", text: tr.steps ? "Pods by step" : "Replicas" }),
          h(
            "span",
            { class: "muted", style: "font-size:var(--text-xs);font-weight:400", text: tr.pods_gone && replicas.length ? (tr.steps ? "Pods gone; as the task recorded them" : "Pods gone; as the task recorded them, and the training operator's exit events") : replicas.length ? "Select a row to show its log" : "" }
          )
        ),
        body
      );
      if (focused) {
        var again = parts.replicas.querySelector('[data-replica="' + focused.replace(/"/g, "") + '"]');
        if (again) again.focus();
      }
    }

    // -- the log of the chosen replica
    function buildLog() {
      parts.logTitle = h("h2", { id: "log-h", text: "Log" });
      parts.logMeta = h("span", { class: "muted", style: "font-size:var(--text-xs);font-weight:400" });
      parts.logLive = h("span", { class: "status-line" });
      var tail = h(
        "select",
        {
          class: "input",
          "aria-label": "Lines to show",
          onchange: function (e) {
            state.tailLines = Number(e.target.value);
            loadLog(true);
          },
        },
        [100, 200, 500, 1000].map(function (n) {
          var o = h("option", { value: n }, "last " + n + " lines");
          o.selected = n === state.tailLines;
          return o;
        })
      );
      parts.logNote = h("div", { class: "log-note", hidden: true });
      parts.logPre = h("pre", { class: "log", tabindex: "0", "aria-label": "Log lines" });
      replaceChildren(
        parts.log,
        h("div", { class: "section-head" }, parts.logTitle, parts.logMeta, h("span", { class: "spacer" }), parts.logLive, tail),
        parts.logNote,
        parts.logPre
      );
    }

    function loadLog(fresh) {
      var tr = currentTry();
      var replica = tr ? selectedReplica(tr) : null;
      logPoller.cancel();
      if (!tr || !replica || !replica.pod || replica.gone) {
        parts.logTitle.textContent = replica ? "Log — " + replicaKey(replica) : "Log";
        parts.logMeta.textContent = replica && replica.pod ? "pod " + replica.pod : "";
        replaceChildren(parts.logLive);
        showLogNote(
          replica && replica.gone
            ? (tr.pods_gone ? PODS_GONE + " Their logs went with them" : "This pod is gone (removed since the task recorded it); its log went with it") +
                " (the task's log has the lead replica's, and its error the failed replicas' last lines)."
            : tr && tr.exists
              ? "No pod to read a log from yet."
              : "No pod was recorded for this try."
        );
        parts.logPre.textContent = "";
        parts.logPre.hidden = true;
        if (tr && tr.refresh_seconds) logPoller.schedule(tr.refresh_seconds);
        return;
      }
      var key = tr.try_number + "/" + replica.pod;
      parts.logTitle.textContent = "Log — " + replicaKey(replica);
      if (fresh) {
        parts.logMeta.textContent = "pod " + replica.pod;
        parts.logPre.textContent = "Loading…";
        parts.logPre.dataset.stick = "1";
      }
      getJSON("task-instance/log", {
        dag_id: ti.dag_id,
        run_id: ti.run_id,
        task_id: ti.task_id,
        map_index: ti.map_index,
        try_number: tr.try_number,
        pod: replica.pod,
        tail_lines: state.tailLines,
      }).then(
        function (log) {
          if (state.logFor !== key) return; // the user chose another replica meanwhile
          var pre = parts.logPre;
          var atBottom = pre.dataset.stick === "1" || pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
          parts.logMeta.textContent = "pod " + log.pod + (log.container ? " · container " + log.container : "");
          showLogNote(log.available ? log.message : log.message || "The log of this pod is not available any more.");
          var lines = log.lines || []; // without terminal codes (ANSI colours): the API strips them
          pre.textContent = lines.length ? lines.join("\n") : log.available ? "(no output yet)" : "";
          pre.hidden = !lines.length && !log.available;
          if (atBottom) pre.scrollTop = pre.scrollHeight;
          pre.dataset.stick = "";
          var live = log.running && tr.refresh_seconds;
          replaceChildren(
            parts.logLive,
            live ? h("span", { class: "live-dot", "aria-hidden": "true" }) : null,
            live ? "following" : log.running ? "" : "pod finished"
          );
          logPoller.schedule(live ? tr.refresh_seconds : null);
        },
        function (error) {
          if (state.logFor !== key) return;
          showLogNote(errorMessage(error));
          parts.logPre.hidden = true;
          var again = error instanceof ApiError && (error.status === 0 || error.status >= 500);
          logPoller.schedule(again && tr.refresh_seconds ? Math.max(10, tr.refresh_seconds) : null);
        }
      );
    }

    function showLogNote(text) {
      parts.logNote.hidden = !text;
      parts.logNote.textContent = text || "";
      if (!text) parts.logPre.hidden = false;
    }

    function renderEvents(tr) {
      var events = tr.events || [];
      if (!changed(parts.events, JSON.stringify([tr.try_number, events]))) {
        refreshRelativeTimes(parts.events);
        return;
      }
      var body = events.length
        ? h(
            "div",
            { class: "section-body flush", style: "max-height:24rem;overflow:auto" },
            h(
              "table",
              { class: "table" },
              h("caption", { class: "visually-hidden", text: "Recent events of the job and its pods, newest first" }),
              h(
                "thead",
                null,
                h(
                  "tr",
                  null,
                  ["Time", "Type", "Reason", "Object", "Message"].map(function (label) {
                    return h("th", { scope: "col", text: label });
                  })
                )
              ),
              h(
                "tbody",
                null,
                events.map(function (e) {
                  var warning = e.type === "Warning";
                  return h(
                    "tr",
                    { class: warning ? "warning-row" : null },
                    h("td", { class: "nowrap" }, timeCell(e.time, true)),
                    h("td", { class: "type nowrap" }, warning ? h("span", null, icon("alert"), " ") : null, e.type || "—"),
                    h("td", { class: "nowrap" }, e.reason || "—", e.count > 1 ? h("span", { class: "muted", text: " ×" + e.count }) : null),
                    h("td", null, h("span", { class: "mono", text: e.object || "—" })),
                    h("td", null, e.message || "")
                  );
                })
              )
            )
          )
        : h("div", { class: "section-body muted", text: "No events." });
      replaceChildren(
        parts.events,
        h(
          "div",
          { class: "section-head" },
          h("h2", { id: "events-h", text: "Recent events" }),
          h("span", { class: "muted", style: "font-size:var(--text-xs);font-weight:400", text: events.length ? events.length + ", newest first" : "" })
        ),
        body
      );
    }

    function renderManifest(tr) {
      var text = tr.manifest_yaml;
      var key = tr.try_number + ":" + (text ? text.length : 0);
      if (parts.manifest.dataset.key === key) return; // keep it open, scrolled and selected as it is
      parts.manifest.dataset.key = key;
      var copy = h(
        "button",
        {
          type: "button",
          class: "btn",
          onclick: function (e) {
            e.preventDefault();
            e.stopPropagation();
            var button = e.currentTarget;
            copyText(text).then(
              function () {
                button.lastChild.textContent = "Copied";
              },
              function () {
                button.lastChild.textContent = "Copy failed: select the text";
              }
            );
            window.setTimeout(function () {
              button.lastChild.textContent = "Copy";
            }, 2000);
          },
        },
        icon("copy"),
        h("span", { text: "Copy" })
      );
      var lines = text ? text.replace(/\n$/, "").split("\n").length : 0;
      replaceChildren(
        parts.manifest,
        h(
          "summary",
          null,
          (function () {
            var c = icon("chevron");
            c.setAttribute("class", "chevron");
            return c;
          })(),
          h("span", { text: "Manifest" }),
          h("span", { class: "muted", text: text ? "YAML as sent · " + lines + " lines" : "" }),
          h("span", { class: "spacer" }),
          text ? copy : null
        ),
        text
          ? h("pre", { class: "manifest", tabindex: "0", "aria-label": "Manifest YAML", text: text })
          : h("div", { class: "section-body muted", text: "The task recorded no manifest for this try." })
      );
    }

    build();
    load();
  }

  // ------------------------------------------------------------------ training jobs page

  function jobsPage() {
    var REFRESH_SECONDS = 10;
    var query = new URLSearchParams(window.location.search);
    var state = { phase: query.get("phase") || "", dag: query.get("dag_id") || "", data: null, error: null, dags: {} };
    var root = document.getElementById("app");
    var parts = {};
    var poller = new Poller(load);

    function build() {
      parts.refresh = h(
        "button",
        {
          type: "button",
          class: "btn",
          onclick: function () {
            poller.fire();
          },
        },
        icon("refresh"),
        "Refresh"
      );
      parts.updated = h("span", { class: "status-line", "aria-live": "polite" });
      parts.error = h("div");
      parts.sources = h("div");
      parts.counts = h("div", { class: "counts", role: "group", "aria-label": "Jobs per phase (select to filter)" });
      parts.phaseSelect = h("select", { class: "input", id: "phase-filter", onchange: function (e) { setFilter(e.target.value, state.dag); } });
      parts.dagSelect = h("select", { class: "input", id: "dag-filter", onchange: function (e) { setFilter(state.phase, e.target.value); } });
      parts.clear = h("button", { type: "button", class: "btn", onclick: function () { setFilter("", ""); } }, "Clear filters");
      parts.table = h("section", { class: "section", "aria-labelledby": "jobs-h" });
      replaceChildren(
        root,
        h(
          "div",
          { class: "page-header" },
          h("h1", { id: "jobs-h", text: "Training jobs" }),
          h("span", { class: "muted", text: "launched by Airflow, in the namespaces of the configured connections" }),
          h("span", { class: "spacer" }),
          parts.updated,
          parts.refresh
        ),
        parts.error,
        parts.sources,
        parts.counts,
        h(
          "p",
          { class: "muted scope-note", id: "jobs-scope" },
          "Only jobs still in the cluster are listed: a job deleted at its end (by default, on_finish deletes succeeded jobs) is not. " +
            "Its task instance's Training job tab shows what the task recorded of it."
        ),
        (parts.filters = h(
          "div",
          { class: "filters", hidden: true },
          h("label", { class: "field", for: "phase-filter" }, "Phase"),
          parts.phaseSelect,
          h("label", { class: "field", for: "dag-filter" }, "DAG"),
          parts.dagSelect,
          parts.clear
        )),
        parts.table
      );
    }

    function renderUpdated() {
      if (!state.updatedAt) return;
      var when = clockTime(state.updatedAt, true);
      if (document.hidden) replaceChildren(parts.updated, "Paused while the tab is hidden · updated " + when);
      else if (state.error) replaceChildren(parts.updated, icon("alert"), " Not updated: the last refresh failed · updated " + when);
      else replaceChildren(parts.updated, "Updated " + when + " · refreshes every " + REFRESH_SECONDS + " s");
    }

    document.addEventListener("visibilitychange", renderUpdated);

    function setFilter(phase, dag) {
      state.phase = phase;
      state.dag = dag;
      var params = new URLSearchParams();
      if (phase) params.set("phase", phase);
      if (dag) params.set("dag_id", dag);
      var search = params.toString();
      try {
        window.history.replaceState(null, "", window.location.pathname + (search ? "?" + search : ""));
      } catch (e) {
        /* a sandboxed frame may refuse; the filter still applies */
      }
      if (state.data) render();
      else renderFilters();
    }

    function load() {
      // Unfiltered, and filtered here: filters apply at once and the DAG list holds every DAG.
      return getJSON("jobs", {}).then(
        function (data) {
          state.data = data;
          state.error = null;
          state.updatedAt = Date.now();
          state.dags = {};
          (data.jobs || []).forEach(function (j) {
            if (j.dag_id) state.dags[j.dag_id] = true;
          });
          poller.schedule(REFRESH_SECONDS);
          whenIdle(guarded(render, parts.error));
        },
        function (error) {
          state.error = errorMessage(error);
          replaceChildren(parts.error, alertBox("error", state.error));
          renderUpdated();
          var again = error instanceof ApiError && (error.status === 0 || error.status >= 500);
          poller.schedule(again ? REFRESH_SECONDS : null);
          if (!state.data) {
            replaceChildren(parts.table);
            parts.table.hidden = true;
          }
        }
      );
    }

    function phasesKnown() {
      var counts = (state.data && state.data.counts) || {};
      var phases = Object.keys(counts);
      if (state.phase && phases.indexOf(state.phase) < 0) phases.push(state.phase);
      return phases.sort(function (a, b) {
        var ia = PHASE_ORDER.indexOf(a);
        var ib = PHASE_ORDER.indexOf(b);
        return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || (a < b ? -1 : 1);
      });
    }

    function renderFilters() {
      var phaseOptions = [h("option", { value: "" }, "All phases")].concat(
        phasesKnown().map(function (p) {
          return h("option", { value: p }, p);
        })
      );
      replaceChildren(parts.phaseSelect, phaseOptions);
      parts.phaseSelect.value = state.phase;
      var dags = Object.keys(state.dags);
      if (state.dag && dags.indexOf(state.dag) < 0) dags.push(state.dag);
      dags.sort();
      replaceChildren(
        parts.dagSelect,
        [h("option", { value: "" }, "All DAGs")].concat(
          dags.map(function (d) {
            return h("option", { value: d }, d);
          })
        )
      );
      parts.dagSelect.value = state.dag;
      parts.clear.hidden = !state.phase && !state.dag;
      Array.prototype.forEach.call(parts.counts.querySelectorAll("button[data-phase]"), function (b) {
        b.setAttribute("aria-pressed", b.getAttribute("data-phase") === state.phase ? "true" : "false");
      });
    }

    function render() {
      var data = state.data;
      replaceChildren(parts.error);
      parts.table.hidden = false;
      parts.filters.hidden = false;
      renderUpdated();
      replaceChildren(
        parts.sources,
        (data.sources || [])
          .filter(function (src) {
            return src.error;
          })
          .map(function (src) {
            var where = src.namespace ? "in namespace " + src.namespace : "in the namespace";
            return alertBox(
              "warning",
              "Could not list training jobs " + where + " of connection " + src.connection + ": " + src.error,
              h("span", { class: "muted", text: " Jobs there are missing below." })
            );
          })
      );
      var counts = data.counts || {};
      var total = Object.keys(counts).reduce(function (n, k) {
        return n + (counts[k] || 0);
      }, 0);
      replaceChildren(
        parts.counts,
        h(
          "button",
          { type: "button", class: "count", "data-phase": "", "aria-pressed": state.phase ? "false" : "true", onclick: function () { setFilter("", state.dag); } },
          h("span", { class: "n", text: String(total) }),
          h("span", { text: "All" })
        ),
        phasesKnown().map(function (p) {
          return h(
            "button",
            {
              type: "button",
              class: "count",
              "data-phase": p,
              "aria-pressed": state.phase === p ? "true" : "false",
              onclick: function () {
                setFilter(state.phase === p ? "" : p, state.dag);
              },
            },
            badge(p),
            h("span", { class: "n", text: String(counts[p] || 0) })
          );
        })
      );
      renderFilters();
      renderTable(
        (data.jobs || []).filter(function (j) {
          return (!state.phase || j.phase === state.phase) && (!state.dag || j.dag_id === state.dag);
        }),
        total
      );
    }

    /** "2/3 active" while the job runs; once it is terminal only what finished ("1 failed of 3"): the controller
     * leaves its last active count behind, which the API does not pass on (replicas_active is null). */
    function replicasCell(j) {
      if (j.steps) return nodesCell(j);
      var desired = j.replicas_desired === null || j.replicas_desired === undefined ? "—" : j.replicas_desired;
      if (j.replicas_active === null || j.replicas_active === undefined) {
        var finished = [];
        if (j.replicas_succeeded) finished.push(j.replicas_succeeded + " succeeded");
        if (j.replicas_failed) finished.push(j.replicas_failed + " failed");
        return h("td", { class: "num nowrap" }, finished.join(", ") || "none finished", h("span", { class: "sub", text: "of " + desired }));
      }
      return h("td", { class: "num nowrap" }, j.replicas_active + "/" + desired, h("span", { class: "sub", text: "active" }));
    }

    /** A TrainJob's cell: the nodes it asks for, and the trainer's progress when reported, else its node step's
     * counts (of child Jobs, views.steps). */
    function nodesCell(j) {
      var nodes = j.nodes === null || j.nodes === undefined ? "—" : j.nodes + (j.nodes === 1 ? " node" : " nodes");
      var node = (j.steps || []).filter(function (step) {
        return step.nodes !== null && step.nodes !== undefined;
      })[0];
      var said = j.progress ? progressText(j.progress, isTerminal(j.phase)) : node ? node.text : "";
      return h("td", { class: "num nowrap" }, j.progress ? progressBar(j.progress) : null, nodes, said ? h("span", { class: "sub", text: said }) : null);
    }

    function renderTable(jobs, total) {
      if (selectingIn(parts.table) && parts.table.getAttribute("data-filter") === state.phase + "|" + state.dag) return;
      parts.table.setAttribute("data-filter", state.phase + "|" + state.dag);
      if (!jobs.length) {
        replaceChildren(
          parts.table,
          h(
            "div",
            { class: "empty" },
            icon("box"),
            h("div", { class: "title", text: total && (state.phase || state.dag) ? "No training jobs match these filters" : "No training jobs" }),
            h("div", { text: total ? "Clear the filters to see all " + total + "." : "Jobs that Airflow's training-job tasks create show up here." })
          )
        );
        return;
      }
      var now = Date.now();
      replaceChildren(
        parts.table,
        h(
          "div",
          { class: "section-body flush" },
          h(
            "table",
            { class: "table" },
            h("caption", { class: "visually-hidden", text: "Training jobs, newest first" }),
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                ["Phase", "Job", "DAG · task · run", "Started", "Duration", "Replicas", "Last failure"].map(function (label) {
                  return h("th", { scope: "col", class: label === "Replicas" || label === "Duration" ? "num" : null, text: label });
                })
              )
            ),
            h(
              "tbody",
              null,
              jobs.map(function (j) {
                var started = j.start_time || j.created_at;
                var task = j.task_id + (j.map_index !== null && j.map_index !== undefined && Number(j.map_index) >= 0 ? " [" + j.map_index + "]" : "");
                return h(
                  "tr",
                  null,
                  h("td", null, badge(j.phase), j.reason ? h("span", { class: "sub", text: j.reason }) : null),
                  h(
                    "td",
                    null,
                    h("span", { text: j.kind }),
                    h("span", { class: "sub mono wrap", text: j.namespace + "/" + j.name }),
                    j.runtime ? h("span", { class: "sub runtime", title: "The runtime it runs on", text: "on " + j.runtime }) : null
                  ),
                  h(
                    "td",
                    { class: "identity" },
                    h("span", { class: "line" }, j.dag_id ? airflowLink(j.dag_url, j.dag_id, { class: "strong" }) : "—"),
                    h(
                      "span",
                      { class: "line" },
                      j.task_id ? airflowLink(j.training_job_url || j.task_instance_url, task, { title: "The task instance's Training job tab" }) : "—",
                      j.try_number ? h("span", { class: "muted", text: " · try " + j.try_number }) : null
                    ),
                    j.run_id ? h("span", { class: "line sub" }, airflowLink(j.run_url, j.run_id, { class: "truncate", title: j.run_id })) : null
                  ),
                  h(
                    "td",
                    { class: "nowrap" },
                    started ? h("time", { datetime: started, title: formatTime(started, true), text: formatTime(started) }) : "—",
                    started ? h("span", { class: "sub", text: (j.start_time ? "" : "created ") + ago(started, now) }) : null
                  ),
                  h("td", { class: "num nowrap", text: formatDuration(j.duration_seconds) }),
                  replicasCell(j),
                  h("td", null, j.last_failure_reason ? h("span", { class: "failure", text: j.last_failure_reason }) : h("span", { class: "muted", text: "—" }))
                );
              })
            )
          )
        )
      );
    }

    build();
    renderFilters();
    load();
  }

  // ------------------------------------------------------------------ start

  followColourMode(); // now, in <head>: no flash of the other colour mode
  function start() {
    var page = document.body.getAttribute("data-page");
    if (page === "task-instance") taskInstancePage();
    else if (page === "jobs") jobsPage();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
