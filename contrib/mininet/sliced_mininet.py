#!/usr/bin/python3
"""A Mininet network controlled by sliced, with its hosts put into slices.

Builds one of Mininet's own topologies (as `mn --topo` names them) of Open vSwitch
switches on the userspace datapath, points them at sliced as a remote controller, waits
until every switch is connected, then makes the slices through sliced's REST API.

    sudo contrib/mininet/sliced_mininet.py --topo tree,depth=2,fanout=3
    sudo contrib/mininet/sliced_mininet.py --topo torus,3,3 --slice web=h1,h5 --slice db=h5,h9

Host hN has the MAC address 00:00:00:00:00:<N in hex>, 10.0.0.N and fd00::N (as `mn
--mac` numbers them, in the order of their names). Without --slice the demo makes `red`
(the odd hosts) and `blue` (the even ones). Needs root, Debian's `mininet` (run it with
/usr/bin/python3) and Open vSwitch; OVS_RUNDIR and friends point it at a private
Open vSwitch. It never runs `mn -c`: it refuses to start when interfaces of the same names
are already there, and when sliced already holds slices that would change the network it
prints (one of its slices' names, or one on its switches' ports) unless --replace.
"""

import argparse
import ipaddress
import json
import os
import re
import shutil
import signal
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from functools import partial

from mininet.cli import CLI
from mininet.log import info, setLogLevel
from mininet.net import Mininet
from mininet.node import OVSSwitch, RemoteController
from mininet.topo import LinearTopo, SingleSwitchTopo
from mininet.topolib import TorusTopo, TreeTopo
from mininet.util import buildTopo, sysctlTestAndSet

TOPOS = {'single': SingleSwitchTopo, 'linear': LinearTopo,
         'tree': TreeTopo, 'torus': TorusTopo}


class Interrupted(Exception):
    """SIGTERM or SIGINT while waiting: time to stop the network."""


class Signals:
    """SIGTERM and SIGINT are only noted while Mininet builds or stops the network (an
    exception in the middle of one of its shell commands would leave that node unable to
    run the commands that take it down), and raise Interrupted while the script waits
    for the end."""

    def __init__(self):
        self.arrived = False
        self.interruptible = False
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self.on_signal)

    def on_signal(self, _signum, _frame):
        self.arrived = True
        if self.interruptible:
            raise Interrupted()

    def wait_for(self, wait):
        """Runs wait() until it returns or a signal comes."""
        self.interruptible = True
        try:
            if not self.arrived:
                wait()
        except Interrupted:
            pass
        finally:
            self.interruptible = False


def parse_args():
    parser = argparse.ArgumentParser(
        description='A Mininet network controlled by sliced, its hosts in slices.')
    parser.add_argument('--topo', default='tree,depth=2,fanout=3',
                        help='topology as mn takes it: single,N | linear,N | '
                             'tree,depth=D,fanout=F | torus,X,Y (default: %(default)s)')
    parser.add_argument('--of', choices=('10', '13'), default='13',
                        help='OpenFlow version of the switches (default: %(default)s)')
    parser.add_argument('--controller', default='127.0.0.1:6653',
                        metavar='[tcp:|ssl:]HOST:PORT',
                        help="sliced's OpenFlow address; ssl: uses the certificates of "
                             'ovs-vsctl set-ssl (default: %(default)s)')
    parser.add_argument('--api', default='http://127.0.0.1:9292', metavar='URL',
                        help="sliced's REST API (default: %(default)s)")
    parser.add_argument('--slice', action='append', default=[], metavar='NAME=h1,h2,...',
                        help='make this slice of these hosts (repeatable); without it, '
                             'red (odd hosts) and blue (even hosts)')
    parser.add_argument('--no-slices', action='store_true', help='make no slice')
    parser.add_argument('--replace', action='store_true',
                        help='delete the slices sliced already has under the names of '
                             "this run's slices or on its switches' ports (left from an "
                             'earlier run), then make them anew; without it the script '
                             'names them and stops')
    parser.add_argument('--describe', metavar='FILE',
                        help='once the network is up and sliced, write it here as JSON')
    parser.add_argument('--no-cli', action='store_true',
                        help="instead of Mininet's CLI, wait until stdin closes or "
                             'SIGTERM/SIGINT comes, then stop the network')
    args = parser.parse_args()
    if args.no_slices and args.slice:
        parser.error('--no-slices and --slice exclude each other')
    protocol, sep, address = args.controller.partition(':')
    if protocol not in ('tcp', 'ssl'):
        protocol, address = 'tcp', args.controller
    host, sep, port = address.rpartition(':')
    if not sep or not host or not port.isdigit():
        parser.error('--controller takes [tcp:|ssl:]HOST:PORT, not %r' % args.controller)
    args.controller = (protocol, host.strip('[]'), int(port))
    slices = []
    for spec in args.slice:
        name, sep, members = spec.partition('=')
        if not sep or not name:
            parser.error('--slice takes NAME=h1,h2,..., not %r' % spec)
        slices.append((name, [m for m in members.split(',') if m]))
    args.slice = slices
    return args


def number(host):
    """The host's number: Mininet counts hosts in name order and gives hN the MAC
    address and IPv4 address of that number (`--mac`)."""
    return int(host.MAC().replace(':', ''), 16)


def ipv6(host):
    # fd00::10 for h10, as 10.0.0.10: the digits of the number read as one hex group.
    return str(ipaddress.IPv6Address('fd00::%d:%d' % divmod(number(host), 10000)))


def far_end(intf):
    """The interface at the other end of intf's link."""
    link = intf.link
    return link.intf2 if link.intf1 is intf else link.intf1


def end(intf):
    """A switch's interface as the description shows it."""
    switch = intf.node
    return {'switch': switch.name, 'dpid': int(switch.dpid, 16),
            'port_no': switch.ports[intf], 'intf': intf.name}


class Api:
    """sliced's REST API, through urllib with no proxy (the API is usually on
    loopback, which a proxy from the environment would not reach)."""

    def __init__(self, url):
        self.url = url.rstrip('/')
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def call(self, method, path, body=None, allowed=()):
        """The answer's JSON (None when empty), or the status when it is one of
        `allowed`; any other error stops the script."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + urllib.parse.quote(path, safe='/:'), data=data, method=method,
            headers={'Content-Type': 'application/json'})
        try:
            with self.opener.open(request, timeout=10) as response:
                text = response.read()
                return json.loads(text) if text.strip() else None
        except urllib.error.HTTPError as err:
            if err.code in allowed:
                return err.code
            raise SystemExit('sliced_mininet: %s %s %s: %d %s' % (
                method, path, '' if body is None else json.dumps(body), err.code,
                err.read().decode(errors='replace')))
        except urllib.error.URLError as err:
            raise SystemExit('sliced_mininet: cannot reach sliced at %s: %s' % (
                self.url, err.reason))


def switch_dpids(topo):
    """The datapath ids Mininet will give the topology's switches: the one a topology
    sets (a torus), else the number in the switch's name (s10 is 10), as Mininet's
    Switch.defaultDpid."""
    dpids = set()
    for name in topo.switches():
        given = topo.nodeInfo(name).get('dpid')
        if given:
            dpids.add(int(given.replace(':', ''), 16))
        else:
            digits = re.findall(r'\d+', name)
            if digits:
                dpids.add(int(digits[0]))
    return dpids


def leftover_slices(api, names, dpids):
    """The slices sliced already has that would make the network differ from what the
    script prints: one of the names it is about to make (it would merge into it), or
    any slice holding a port of one of its switches (its hosts would reach beyond
    their slices). Each with why, in sliced's order."""
    found = []
    for entry in api.call('GET', '/slices') or []:
        name = entry.get('name')
        ports = api.call('GET', '/slices/%s/ports' % name, allowed=(404,))
        if ports == 404:
            continue  # deleted meanwhile
        ours = sorted(p['name'] for p in ports if p.get('dpid') in dpids)
        if name in names:
            found.append((name, 'a name this run makes'))
        elif ours:
            found.append((name, 'holds %s' % ', '.join(ours)))
    return found


def check_leftovers(api, slices, dpids, replace):
    """Before the network is built: stops when sliced holds slices left from before
    that would change the network, unless --replace. Returns those to delete, which
    wait until the network is up: a run that fails before then leaves sliced as it was."""
    leftovers = leftover_slices(api, {name for name, _ in slices}, dpids)
    if leftovers and not replace:
        listed = '; '.join('%s (%s)' % (name, why) for name, why in leftovers)
        raise SystemExit(
            'sliced_mininet: sliced at %s already has slices that would change this '
            'network: %s. They are probably left from an earlier run; delete them '
            '(slice delete NAME, or DELETE /slices) or run again with --replace to have '
            'them deleted and this run\'s slices made anew. Nothing was changed.' % (
                api.url, listed))
    return leftovers


def delete_leftovers(api, leftovers):
    for name, why in leftovers:
        api.call('DELETE', '/slices', {'name': name}, allowed=(404,))
        print('sliced_mininet: --replace: deleted slice %s (%s)' % (name, why),
              file=sys.stderr)


def make_slices(net, api, slices):
    for name, members in slices:
        # 409: made by someone else since the check; merging into it would make a
        # network other than the one printed.
        if api.call('POST', '/slices', {'name': name}, allowed=(409,)) == 409:
            raise SystemExit('sliced_mininet: slice %s appeared in sliced while the '
                             'network was built; stopping rather than merging into '
                             'it' % name)
        for member in members:
            host = net[member]
            at = end(far_end(host.defaultIntf()))
            # sliced's name of a port: 0x<dpid in hex>:<port number>.
            port = '0x%x:%d' % (at['dpid'], at['port_no'])
            api.call('POST', '/slices/%s/ports' % name,
                     {'dpid': at['dpid'], 'port_no': at['port_no']}, allowed=(409,))
            api.call('POST', '/slices/%s/ports/%s/mac_addresses' % (name, port),
                     {'name': host.MAC()}, allowed=(409,))


def description(net, topo, of, slices):
    hosts = []
    for host in net.hosts:
        at = end(far_end(host.defaultIntf()))
        hosts.append({'name': host.name, 'pid': host.pid, 'mac': host.MAC(),
                      'ipv4': host.IP(), 'ipv6': ipv6(host),
                      'dpid': at['dpid'], 'port_no': at['port_no']})
    links = [[end(link.intf1), end(link.intf2)] for link in net.links
             if link.intf1.node in net.switches and link.intf2.node in net.switches]
    return {'topo': topo, 'of': int(of),
            'switches': [{'name': s.name, 'dpid': int(s.dpid, 16)} for s in net.switches],
            'hosts': hosts, 'links': links,
            'slices': {name: members for name, members in slices}}


def write_description(path, value):
    # Written whole under another name first: a reader never sees half of it.
    partial_path = path + '.partial'
    with open(partial_path, 'w') as out:
        json.dump(value, out, indent=1)
        out.write('\n')
    os.replace(partial_path, path)


def taken_names(topo):
    """Interfaces of the root namespace that this network would need, already there
    (another Mininet, or one that was not stopped)."""
    switches = set(topo.switches())
    return sorted(name for name in os.listdir('/sys/class/net')
                  if name.split('-eth')[0] in switches)


def raise_ipv6_neighbour_limits():
    """Mininet raises the kernel's IPv4 neighbour table limits (fixLimits) but not the
    IPv6 ones. That table is one for all namespaces, of 1024 entries by default, which a
    hundred hosts pinging each other over IPv6 overflow ("ndisc_cache: neighbor table
    overflow!" in dmesg, and neighbour solicitations that never go out). Raised to
    Mininet's IPv4 values; never lowered.

    The kernel shows these limits only in the first network namespace (they are the
    table's, not a namespace's): in any other, a container's, the files do not exist and
    a read-only /proc/sys refuses the write. Then they stay as the host has them, and a
    line says so; the network still comes up."""
    skipped = []
    for level, limit in ((1, 4096), (2, 8192), (3, 16384)):
        name = 'net.ipv6.neigh.default.gc_thresh%d' % level
        path = '/proc/sys/' + name.replace('.', '/')
        if not os.path.exists(path):
            skipped.append('%s (not in this network namespace)' % name)
            continue
        try:
            sysctlTestAndSet(path, limit)
        except OSError as err:
            skipped.append('%s (%s)' % (name, err.strerror or err))
    if skipped:
        print('sliced_mininet: left the IPv6 neighbour table limits as they are: %s; '
              'the table is shared with the host, so for a hundred hosts or more raise '
              'them there (sysctl -w net.ipv6.neigh.default.gc_thresh3=16384 and '
              'gc_thresh1/2 to 4096/8192)' % ', '.join(skipped), file=sys.stderr)


def configure_hosts(net):
    for host in net.hosts:
        intf = host.defaultIntf()
        # nodad: usable at once, so `ping -6 fd00::N` needs no link-local scope id.
        host.cmd('ip -6 addr add %s/64 dev %s nodad' % (ipv6(host), intf))
        # The userspace datapath reads frames off the veths with packet sockets and does
        # not complete checksums a sender left to the "hardware": TCP between hosts
        # would fail (ping works either way).
        if shutil.which('ethtool'):
            host.cmd('ethtool -K %s tx off' % intf)
    if not shutil.which('ethtool'):
        print('sliced_mininet: without ethtool, TCP between hosts fails on the userspace '
              'datapath (apt-get install ethtool)', file=sys.stderr)


def quiet_ipv6_chatter(net):
    """No router ever answers in a Mininet network, yet Linux solicits one for as long as an
    interface is up (backing off to once an hour): on sliced's pipeline each solicitation
    of a host bound nowhere, and each frame a switch port's own IP stack sends onto a
    cable, is a PACKET_IN. Hosts stop soliciting; switch ports, which are no hosts, get no
    IPv6 at all."""
    for host in net.hosts:
        host.cmd('sysctl -q -w net.ipv6.conf.%s.router_solicitations=0' % host.defaultIntf())
    for switch in net.switches:
        for intf in switch.intfList():
            if intf.name != 'lo':
                switch.cmd('sysctl -q -w net.ipv6.conf.%s.disable_ipv6=1' % intf.name)


def wait_connected(net, signals):
    """Mininet's waitConnected, which a signal ends between two checks rather than in
    the middle of one."""
    info('*** Waiting for switches to connect\n')
    remaining = list(net.switches)
    while remaining and not signals.arrived:
        remaining = [switch for switch in remaining if not switch.connected()]
        if remaining:
            time.sleep(0.5)
    return not remaining


def settle(nodes):
    """Lets the command a signal interrupted in a node's shell (a CLI command) end, so
    that the node can run the ones that stop the network."""
    for node in nodes:
        if node.shell and node.waiting:
            node.sendInt()
            node.waitOutput()


def wait_for_stdin_to_close():
    # Read and dropped in pieces: whatever comes before the end costs no memory.
    while os.read(sys.stdin.fileno(), 65536):
        pass


def default_slices(net):
    odd = [h.name for h in net.hosts if number(h) % 2 == 1]
    even = [h.name for h in net.hosts if number(h) % 2 == 0]
    return [('red', odd), ('blue', even)]


def main():
    args = parse_args()
    setLogLevel('info')
    topo = buildTopo(TOPOS, args.topo)
    taken = taken_names(topo)
    if taken:
        raise SystemExit('sliced_mininet: %s already exist: another Mininet network runs, '
                         'or one was not stopped; remove them first' % ', '.join(taken))
    for name, members in args.slice:
        unknown = [m for m in members if m not in topo.hosts()]
        if unknown:
            raise SystemExit('sliced_mininet: slice %s: no host %s in %s' % (
                name, ', '.join(unknown), args.topo))
    api = Api(args.api)
    # Without --slice the names are the default ones, red and blue. With --no-slices a
    # leftover slice on the switches' ports still counts: its hosts would talk.
    names = [] if args.no_slices else (args.slice or [('red', []), ('blue', [])])
    leftovers = check_leftovers(api, names, switch_dpids(topo), args.replace)
    protocol, ip, port = args.controller
    net = Mininet(topo=topo, build=False, autoSetMacs=True,
                  switch=partial(OVSSwitch, datapath='user',
                                 protocols='OpenFlow' + args.of),
                  controller=partial(RemoteController, ip=ip, port=port,
                                     protocol=protocol))
    signals = Signals()
    try:
        raise_ipv6_neighbour_limits()
        net.start()
        configure_hosts(net)
        quiet_ipv6_chatter(net)
        if not wait_connected(net, signals):
            return
        slices = [] if args.no_slices else (args.slice or default_slices(net))
        delete_leftovers(api, leftovers)
        make_slices(net, api, slices)
        for name, members in slices:
            print('slice %s: %s' % (name, ' '.join(members) or '(no host)'))
        if args.describe:
            write_description(args.describe, description(net, args.topo, args.of, slices))
        if args.no_cli:
            signals.wait_for(wait_for_stdin_to_close)
        else:
            # The CLI handles Ctrl-C itself; SIGTERM still ends it.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signals.wait_for(lambda: CLI(net))
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)
        settle(net.hosts + net.switches)
        net.stop()


if __name__ == '__main__':
    main()
