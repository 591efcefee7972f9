// The web view of sliced: the network as a graph, the slices, and forms that change
// them. Everything is read from the session-guarded /api/ endpoints; /api/events says
// when to read again, so changes made elsewhere (the `slice` tool, another browser)
// show without a reload. The parts: state.js reads, graph.js draws the graph,
// panels.js the rest of the page; this file starts it and follows the event stream.

import { api, LoggedOut, readState, readUser, segment } from "./state.js";
import { drawGraph, graph, markSelected } from "./graph.js";
import { drawPanels } from "./panels.js";

// Every event type of GET /events (docs/api.md); any of them means "read again".
const EVENT_TYPES = [
  "slice_created", "slice_deleted", "port_added", "port_deleted", "mac_added", "mac_deleted",
  "switch_up", "switch_down", "link_up", "link_down", "host_learned", "host_moved",
  "host_forgotten", "path_installed", "path_deleted", "resync",
];

// Event types that say the stream is about to end (the daemon stopping): the page stops
// saying "live" at once rather than when the connection drops.
const ENDING_TYPES = ["shutdown", "closing"];

// The wait before reconnecting to a lost stream: doubled at each failure up to the
// last, back to the first once the stream is open.
const FIRST_RETRY_MS = 1000;
const LAST_RETRY_MS = 15000;

// The page itself: without a login the daemon sends the browser on to whichever login it
// offers (the developer form, OpenID Connect), which comes back here.
const LOGIN = "/ui";

let refreshing = null;
let refreshAgain = false;
let lastState = null;
let selected = null;
let detailsSlice = "";
let user = { name: "", email: "", role: "operator", canWrite: true };

// What the page's Content-Security-Policy refused: a refusal means some part of the page
// (a library update, say) does not work, so it is shown rather than left to the console.
const refused = [];
document.addEventListener("securitypolicyviolation", (event) => {
  refused.push(`${event.violatedDirective}: ${event.blockedURI || "inline"}`);
  say(`The page's security policy refused ${refused.at(-1)}`, "error");
});

// What the panels need from the page (see panels.js).
const page = {
  get user() { return user; },
  act: (action) => act(action),
  ask: (question) => ask(question),
  select: (kind, name) => select(kind, name),
  selected: () => selected,
  detailsSlice: (chosen) => {
    if (chosen !== undefined) detailsSlice = chosen;
    return detailsSlice;
  },
};

function draw() {
  if (lastState === null) return;
  drawPanels(lastState, page);
  drawGraph(lastState, select);
  markSelected(selected && selected.kind, selected && selected.name);
}

// Opens the details of a switch or host (`kind` null closes them).
function select(kind, name) {
  selected = kind ? { kind, name } : null;
  draw();
}

function say(message, kind) {
  const status = document.getElementById("status");
  status.textContent = message;
  status.dataset.kind = kind;
}

// Reads the state again; calls that come while a read is under way make one more read
// after it, so that the last change is always shown.
function refresh() {
  if (refreshing) {
    refreshAgain = true;
    return refreshing;
  }
  refreshing = (async () => {
    do {
      refreshAgain = false;
      try {
        lastState = await readState();
        draw();
        document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
      } catch (error) {
        handle(error);
      }
    } while (refreshAgain);
    refreshing = null;
  })();
  return refreshing;
}

function handle(error) {
  if (error instanceof LoggedOut) {
    location.assign(LOGIN);
    return;
  }
  say(error.message, "error");
}

async function act(action) {
  if (!user.canWrite) {
    say("You can only view: your role may not change slices.", "error");
    return;
  }
  try {
    await action();
    say("", "ok");
  } catch (error) {
    handle(error);
  }
  // The event stream would bring the change too; reading now shows it at once.
  refresh();
}

// Asks in the page's own dialog; resolves true only when the removal is confirmed.
function ask(question) {
  const dialog = document.getElementById("confirm");
  dialog.querySelector("p").textContent = question;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes"), { once: true });
    dialog.showModal();
  });
}

function showConnection(state, text) {
  const indicator = document.getElementById("connection");
  indicator.dataset.state = state;
  indicator.textContent = text;
}

// Follows /api/events. A stream that errs or ends is closed and opened again after a
// growing wait, rather than left to the browser's own retry, which gives up for good
// on a refused stream and says nothing meanwhile.
let stream = null;
let retryMs = FIRST_RETRY_MS;

function follow() {
  const events = new EventSource("/api/events");
  stream = events;
  events.addEventListener("open", () => {
    if (events !== stream) return;
    retryMs = FIRST_RETRY_MS;
    showConnection("live", "live");
    // Whatever happened while the stream was down is read now.
    refresh();
  });
  events.addEventListener("error", () => lost(events));
  for (const type of ENDING_TYPES) {
    events.addEventListener(type, () => lost(events));
  }
  for (const type of EVENT_TYPES) {
    events.addEventListener(type, () => refresh());
  }
}

function lost(events) {
  if (events !== stream) return;
  events.close();
  stream = null;
  showConnection("disconnected", "disconnected — reconnecting");
  document.getElementById("connection").title = `next attempt in ${Math.round(retryMs / 1000)} s`;
  // A stream refused because the session ended says nothing about why; asking for the
  // session finds out, and goes to the login if that is it. A daemon that is down
  // answers nothing, which is what the indicator already says.
  api("GET", "/session").catch((error) => {
    if (error instanceof LoggedOut) handle(error);
  });
  setTimeout(follow, retryMs);
  retryMs = Math.min(retryMs * 2, LAST_RETRY_MS);
}

// A viewer gets the page without its write controls (each marked `write`) and a note.
function applyRole() {
  document.body.dataset.role = user.canWrite ? "operator" : "viewer";
  document.getElementById("view-only").hidden = user.canWrite;
  for (const control of document.querySelectorAll(".write")) {
    control.hidden = !user.canWrite;
    for (const input of control.querySelectorAll("input, select, button")) {
      input.disabled = !user.canWrite;
    }
  }
}

function wireForms() {
  const create = document.getElementById("create-slice");
  create.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = create.elements.name.value.trim();
    act(async () => {
      await api("POST", "/slices", { name });
      create.reset();
    });
  });
  const addHost = document.getElementById("add-host");
  addHost.addEventListener("submit", (event) => {
    event.preventDefault();
    const { slice, port, mac } = addHost.elements;
    act(async () => {
      await api("POST", `/slices/${segment(slice.value)}/ports/${segment(port.value.trim())}/mac_addresses`,
        { name: mac.value.trim() });
      port.value = "";
      mac.value = "";
    });
  });
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-yes").addEventListener("click", () => dialog.close("yes"));
  document.getElementById("confirm-no").addEventListener("click", () => dialog.close("no"));
  document.getElementById("logout").addEventListener("submit", async (event) => {
    event.preventDefault();
    await fetch("/auth/logout", { method: "POST", credentials: "same-origin" });
    location.assign(LOGIN);
  });
}

document.addEventListener("DOMContentLoaded", async () => {
  window.sliced = {
    get cy() { return graph(); },
    refresh,
    refused,
    get role() { return user.role; },
  };
  wireForms();
  try {
    user = await readUser();
    document.getElementById("user").textContent = user.email ? `${user.name} <${user.email}>` : user.name;
  } catch (error) {
    handle(error);
    return;
  }
  applyRole();
  await refresh();
  follow();
});
