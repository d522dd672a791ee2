#!/usr/bin/env python3
"""Writes the fake machines of the topo tests as hwloc 2 XML files.

Run it from this folder after a change and check the result in:
    python3 gen_fake_machines.py && lstopo-no-graphics --input dgx8.xml
The tests read the checked-in XML files, not this script.

Machines:
  dgx8.xml      two sockets, 8 GPUs and 8 RDMA NICs: four PCIe switches, two per
                socket, each with 2 GPUs and 2 NICs; plus a management NIC eno1.
  pcie4.xml     one socket, 4 GPUs and one RDMA NIC: switch A (host bridge 0)
                holds GPU 0, GPU 1 and the NIC; switch B (host bridge 1) GPU 2, 3.
  cpu2s.xml     two sockets, no GPU, one Ethernet NIC on socket 1.
"""
import sys


def bitmap(bits):
    """hwloc's bitmap text: 32-bit words, most significant first."""
    value = 0
    for b in bits:
        value |= 1 << b
    words = []
    while True:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
        if value == 0:
            break
    return ",".join("0x%08x" % w for w in reversed(words))


class Gen:
    def __init__(self):
        self.gp = 0
        self.lines = []

    def gp_index(self):
        self.gp += 1
        return self.gp

    def emit(self, depth, text):
        self.lines.append("  " * depth + text)

    def sets(self, cpus, nodes):
        c, n = bitmap(cpus), bitmap(nodes)
        return ('cpuset="%s" complete_cpuset="%s" nodeset="%s" complete_nodeset="%s"'
                % (c, c, n, n))


def pci_type(cls, vendor, device):
    return "%04x [%04x:%04x] [%04x:0000] a1" % (cls, vendor, device, vendor)


def busid(bus, dev=0, fn=0):
    return "0000:%02x:%02x.%x" % (bus, dev, fn)


def emit_osdev(g, depth, name, osdev_type, subtype=None, infos=()):
    sub = ' subtype="%s"' % subtype if subtype else ""
    if not infos:
        g.emit(depth, '<object type="OSDev" gp_index="%d" name="%s"%s osdev_type="%d"/>'
               % (g.gp_index(), name, sub, osdev_type))
        return
    g.emit(depth, '<object type="OSDev" gp_index="%d" name="%s"%s osdev_type="%d">'
           % (g.gp_index(), name, sub, osdev_type))
    for k, v in infos:
        g.emit(depth + 1, '<info name="%s" value="%s"/>' % (k, v))
    g.emit(depth, "</object>")


# hwloc_obj_osdev_type_e values
OSDEV_GPU, OSDEV_NETWORK, OSDEV_OPENFABRICS, OSDEV_COPROC = 1, 2, 3, 5


def emit_device(g, depth, dev):
    """dev: ('gpu', bus, cuda_index, with_nvml) or ('rdma', bus, n, ifname) or ('eth', bus, ifname)."""
    kind, bus = dev[0], dev[1]
    if kind == "gpu":
        attrs = pci_type(0x0302, 0x10DE, 0x2330)
    else:
        attrs = pci_type(0x0200 if kind == "eth" else 0x0207, 0x15B3 if kind == "rdma" else 0x8086,
                         0x101D if kind == "rdma" else 0x1533)
    g.emit(depth, '<object type="PCIDev" gp_index="%d" pci_busid="%s" pci_type="%s" '
           'pci_link_speed="31.507692">' % (g.gp_index(), busid(bus), attrs))
    if kind == "gpu":
        emit_osdev(g, depth + 1, "cuda%d" % dev[2], OSDEV_COPROC, "CUDA",
                   [("CoProcType", "CUDA"), ("GPUVendor", "NVIDIA Corporation")])
        if dev[3]:
            emit_osdev(g, depth + 1, "nvml%d" % dev[2], OSDEV_GPU, "NVML")
    elif kind == "rdma":
        emit_osdev(g, depth + 1, "mlx5_%d" % dev[2], OSDEV_OPENFABRICS, None,
                   [("NodeGUID", "b83f:d203:00%02x:0000" % dev[2])])
        emit_osdev(g, depth + 1, dev[3], OSDEV_NETWORK, None,
                   [("Address", "b8:3f:d2:00:%02x:00" % dev[2])])
    else:
        emit_osdev(g, depth + 1, dev[2], OSDEV_NETWORK, None, [("Address", "3c:ec:ef:00:00:01")])
    g.emit(depth, "</object>")


def emit_switch(g, depth, first_bus, devices):
    """A PCIe switch: upstream port, one downstream port per device."""
    last_bus = first_bus + len(devices)
    g.emit(depth, '<object type="Bridge" gp_index="%d" bridge_type="1-1" depth="1" '
           'bridge_pci="0000:[%02x-%02x]" pci_busid="%s" pci_type="%s" pci_link_speed="31.507692">'
           % (g.gp_index(), first_bus, last_bus, busid(first_bus - 1),
              pci_type(0x0604, 0x1000, 0xC030)))
    for i, dev in enumerate(devices):
        g.emit(depth + 1, '<object type="Bridge" gp_index="%d" bridge_type="1-1" depth="2" '
               'bridge_pci="0000:[%02x-%02x]" pci_busid="%s" pci_type="%s" '
               'pci_link_speed="31.507692">'
               % (g.gp_index(), dev[1], dev[1], busid(first_bus, i),
                  pci_type(0x0604, 0x1000, 0xC030)))
        emit_device(g, depth + 2, dev)
        g.emit(depth + 1, "</object>")
    g.emit(depth, "</object>")


def emit_host_bridge(g, depth, first_bus, last_bus, body):
    g.emit(depth, '<object type="Bridge" gp_index="%d" bridge_type="0-1" depth="0" '
           'bridge_pci="0000:[%02x-%02x]">' % (g.gp_index(), first_bus, last_bus))
    body(depth + 1)
    g.emit(depth, "</object>")


def machine(name, npackages, ncores, npus, io_of_package):
    """io_of_package(g, package, depth) emits the I/O below each package."""
    g = Gen()
    g.emit(0, '<?xml version="1.0" encoding="UTF-8"?>')
    g.emit(0, '<!DOCTYPE topology SYSTEM "hwloc2.dtd">')
    g.emit(0, '<topology version="2.0">')
    per_pkg = ncores * npus
    all_cpus = range(npackages * per_pkg)
    g.emit(1, '<object type="Machine" os_index="0" %s allowed_cpuset="%s" allowed_nodeset="%s" '
           'gp_index="%d">' % (g.sets(all_cpus, range(npackages)), bitmap(all_cpus),
                               bitmap(range(npackages)), g.gp_index()))
    g.emit(2, '<info name="Backend" value="tcomms-fake"/>')
    g.emit(2, '<info name="HostName" value="%s"/>' % name)
    for p in range(npackages):
        cpus = range(p * per_pkg, (p + 1) * per_pkg)
        g.emit(2, '<object type="Package" os_index="%d" %s gp_index="%d">'
               % (p, g.sets(cpus, [p]), g.gp_index()))
        g.emit(3, '<object type="NUMANode" os_index="%d" %s gp_index="%d" '
               'local_memory="68719476736"/>' % (p, g.sets(cpus, [p]), g.gp_index()))
        g.emit(3, '<object type="L3Cache" %s gp_index="%d" cache_size="33554432" depth="3" '
               'cache_linesize="64" cache_associativity="16" cache_type="0">'
               % (g.sets(cpus, [p]), g.gp_index()))
        for c in range(ncores):
            core_cpus = range(p * per_pkg + c * npus, p * per_pkg + (c + 1) * npus)
            g.emit(4, '<object type="L2Cache" %s gp_index="%d" cache_size="1048576" depth="2" '
                   'cache_linesize="64" cache_associativity="8" cache_type="0">'
                   % (g.sets(core_cpus, [p]), g.gp_index()))
            g.emit(5, '<object type="Core" os_index="%d" %s gp_index="%d">'
                   % (p * ncores + c, g.sets(core_cpus, [p]), g.gp_index()))
            for u in core_cpus:
                g.emit(6, '<object type="PU" os_index="%d" %s gp_index="%d"/>'
                       % (u, g.sets([u], [p]), g.gp_index()))
            g.emit(5, "</object>")
            g.emit(4, "</object>")
        g.emit(3, "</object>")
        io_of_package(g, p, 3)
        g.emit(2, "</object>")
    g.emit(1, "</object>")
    g.emit(1, '<support name="discovery.pu"/>')
    g.emit(1, '<support name="discovery.numa"/>')
    g.emit(0, "</topology>")
    return "\n".join(g.lines) + "\n"


def dgx8_io(g, p, depth):
    # Package p: switches 2p and 2p+1, each with GPUs 2s, 2s+1 and NICs mlx5_2s, mlx5_2s+1.
    for s in (2 * p, 2 * p + 1):
        base = 0x10 + 0x20 * s
        devices = [("gpu", base + 1, 2 * s, True), ("rdma", base + 2, 2 * s, "ibp%ds0" % (2 * s)),
                   ("gpu", base + 3, 2 * s + 1, True),
                   ("rdma", base + 4, 2 * s + 1, "ibp%ds0" % (2 * s + 1))]
        emit_host_bridge(g, depth, base - 1, base + 4,
                         lambda d, base=base, devices=devices: emit_switch(g, d, base, devices))
    if p == 0:
        def mgmt(d):
            emit_device(g, d, ("eth", 0x02, "eno1"))
        emit_host_bridge(g, depth, 0x00, 0x02, mgmt)


def pcie4_io(g, p, depth):
    emit_host_bridge(g, depth, 0x10, 0x13, lambda d: emit_switch(
        g, d, 0x11, [("gpu", 0x11, 0, False), ("gpu", 0x12, 1, False),
                     ("rdma", 0x13, 0, "enp19s0")]))
    emit_host_bridge(g, depth, 0x20, 0x22, lambda d: emit_switch(
        g, d, 0x21, [("gpu", 0x21, 2, False), ("gpu", 0x22, 3, False)]))


def cpu2s_io(g, p, depth):
    if p == 1:
        emit_host_bridge(g, depth, 0x80, 0x81,
                         lambda d: emit_device(g, d, ("eth", 0x81, "ens1f0")))


MACHINES = {
    "dgx8.xml": lambda: machine("fake-dgx8", 2, 8, 2, dgx8_io),
    "pcie4.xml": lambda: machine("fake-pcie4", 1, 8, 2, pcie4_io),
    "cpu2s.xml": lambda: machine("fake-cpu2s", 2, 4, 2, cpu2s_io),
}

if __name__ == "__main__":
    for name, make in MACHINES.items():
        with open(name, "w") as f:
            f.write(make())
    sys.exit(0)
