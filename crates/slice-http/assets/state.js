// What the web view knows: the state read from the session-guarded /api/ endpoints, and
// what follows from it (which slices a host is in, each slice's colour, a switch's flows).

export class LoggedOut extends Error {}

export const segment = encodeURIComponent;

export async function api(method, path, body) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch("/api" + path, init);
  const answer = await response.json().catch(() => null);
  // The session guard's refusal carries no `error`: the session is gone. A refusal that
  // says why (a write the user's role may not make) is shown instead.
  if (response.status === 403 && !(answer && answer.error)) {
    throw new LoggedOut();
  }
  if (!response.ok) {
    throw new Error((answer && answer.error) || `${method} ${path}: ${response.status}`);
  }
  return answer;
}

// Who is logged in and what they may do: `/api/session` names the user and their role
// (the local socket's owner is an operator). Only an operator may write; the daemon
// refuses a viewer's writes whatever the page shows.
export async function readUser() {
  const user = await api("GET", "/session");
  const role = typeof user.role === "string" ? user.role : "viewer";
  return { name: user.name, email: user.email || "", role, canWrite: role === "operator" };
}

// The whole state, read afresh: small networks and few slices make this cheaper to get
// right than applying each event to a copy.
export async function readState() {
  const [switches, links, hosts, paths, slices] = await Promise.all([
    api("GET", "/topology/switches").catch(() => []),
    api("GET", "/topology/links").catch(() => []),
    api("GET", "/topology/hosts").catch(() => []),
    api("GET", "/paths").catch(() => []),
    api("GET", "/slices"),
  ]);
  const members = await Promise.all(slices.map(async ({ name }) => {
    const ports = await api("GET", `/slices/${segment(name)}/ports`);
    const withMacs = await Promise.all(ports.map(async (port) => {
      const macs = await api("GET", `/slices/${segment(name)}/ports/${segment(port.name)}/mac_addresses`);
      return { port: port.name, dpid: port.dpid, portNo: port.port_no, macs: macs.map((mac) => mac.name) };
    }));
    return { name, ports: withMacs };
  }));
  members.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { switches, links, hosts, paths, slices: members, colours: coloursOf(members) };
}

export const NO_SLICE = "#999999";

// Slices named after a colour get that colour: `red` is drawn red. The match is the whole
// name or its first word (`red-team`, `blue_lab`), in any case.
export const NAMED_COLOURS = new Map(Object.entries({
  red: "#d62728", orange: "#f28e1c", yellow: "#e3c014", gold: "#d4a017", green: "#2ca02c",
  lime: "#7cc623", olive: "#808000", teal: "#138d90", cyan: "#17becf", blue: "#1f5fd1",
  navy: "#1a2b80", indigo: "#4b2a9e", purple: "#8e44ad", violet: "#9b59d0",
  magenta: "#d6249f", pink: "#e86fae", brown: "#8c564b", maroon: "#800000",
  black: "#222222", white: "#f4f4f4", grey: "#5f6368", gray: "#5f6368", silver: "#b0b4b8",
}));

// Slice name -> colour. Each colour follows from its slice's name alone, so a slice keeps
// its colour whatever other slices come and go: a colour's name gives that colour, any
// other name a hue from a hash of it (FNV-1a), saturated enough never to pass for the
// grey of hosts in no slice.
export function coloursOf(slices) {
  return new Map(slices.map((slice) => [slice.name, colourOf(slice.name)]));
}

export function colourOf(name) {
  const lower = name.toLowerCase();
  const named = NAMED_COLOURS.get(lower) || NAMED_COLOURS.get(lower.split(/[-_.]/)[0]);
  if (named) return named;
  let hash = 0x811c9dc5;
  for (const unit of new TextEncoder().encode(name)) {
    hash = Math.imul(hash ^ unit, 0x01000193) >>> 0;
  }
  const hue = hash % 360;
  const saturation = 0.55 + ((hash >>> 9) % 4) * 0.1;
  const lightness = 0.36 + ((hash >>> 12) % 4) * 0.05;
  return hslToHex(hue, saturation, lightness);
}

function hslToHex(hue, saturation, lightness) {
  const chroma = (1 - Math.abs(2 * lightness - 1)) * saturation;
  const channel = (n) => {
    const k = (n + hue / 30) % 12;
    const value = lightness - chroma / 2 * Math.max(-1, Math.min(k - 3, 9 - k, 1));
    return Math.round(value * 255).toString(16).padStart(2, "0");
  };
  return "#" + channel(0) + channel(8) + channel(4);
}

// The slices a learned host is in, in name order: those listing its MAC on its port, and
// those holding its port with no MAC listed on it (any host behind that port).
export function slicesOfHost(host, slices) {
  return slices
    .filter((slice) => slice.ports.some((member) => member.port === host.port
      && (member.macs.length === 0 || member.macs.includes(host.mac))))
    .map((slice) => slice.name);
}

// The slices that hold a port.
export function slicesOfPort(port, slices) {
  return slices.filter((slice) => slice.ports.some((member) => member.port === port)).map((slice) => slice.name);
}

export const switchOfPort = (port) => port.split(":")[0];

// The flow entries the controller keeps on a switch: the proactive pipeline's count
// where the switch runs it, else one per hop of the paths set up through it.
export function flowsOf(sw, paths) {
  if (sw.pipeline_entries !== null && sw.pipeline_entries !== undefined) {
    return { count: sw.pipeline_entries, kind: "pipeline entries" };
  }
  let count = 0;
  for (const path of paths) {
    // Hops come in pairs, in port then out port, both on the hop's switch.
    for (let at = 0; at < path.hops.length; at += 2) {
      if (switchOfPort(path.hops[at]) === sw.name) count += 1;
    }
  }
  return { count, kind: "path flows" };
}

// The cables between switches, each once (the topology lists both directions).
export function cablesOf(links) {
  const cables = new Map();
  for (const link of links) {
    const ends = [link.src, link.dst].sort();
    cables.set(ends.join(" - "), ends);
  }
  return cables;
}
