#!/usr/bin/env python3
"""Checks the JSON of tc-info for one machine: tc_info_check.py MACHINE < report.json

MACHINE is "host" (this machine) or a fake machine file name (dgx8, pcie4, cpu2s).
"""
import json
import sys


def expect(cond, what):
    if not cond:
        sys.exit("tc_info_check: " + what)


def main():
    machine = sys.argv[1]
    report = json.load(sys.stdin)  # fails on invalid JSON
    node = report["node"]
    expect(report["tc_info_version"] == 1, "version")
    expect(report["job"] is None, "no job outside a launcher")
    expect(any(t["name"] == "tcp" and t["available"] for t in report["transports"]),
           "tcp is listed as available")
    expect(node["pus"] >= 1 and node["hwloc_ok"], "CPUs described")
    gpus, nics = node["gpus"], node["nics"]
    expect(len(node["gpu_nic_link"]) == len(gpus), "link matrix rows")
    if machine == "host":
        expect(node["source"] == "host", "source host")
        expect(node["packages"] >= 1 and node["cores"] >= 1, "host counts")
        return
    expect(node["source"] == "xml", "source xml")
    cfg = {v["name"]: v for v in report["config"]}
    expect(cfg["TC_TOPO_XML"]["parsed"].endswith(machine + ".xml"), "TC_TOPO_XML reported")
    if machine == "dgx8":
        expect((node["packages"], node["numa_nodes"], node["cores"], node["pus"]) == (2, 2, 16, 32),
               "dgx8 counts")
        expect(len(gpus) == 8 and len(nics) == 9, "8 GPUs, 9 NICs")
        for i, g in enumerate(gpus):
            expect(g["name"] == "cuda%d" % i and g["numa"] == i // 4, "gpu %d numa" % i)
            expect(g["nic_name"] == "mlx5_%d" % i and g["nic_link"] == "PIX" and
                   g["nic_hops"] == 4, "gpu %d paired with the NIC on its switch" % i)
            expect(g["switch"] == i // 2 and nics[i]["switch"] == i // 2, "switch of %d" % i)
            expect(nics[i]["numa"] == i // 4 and nics[i]["kind"] == "rdma", "nic %d" % i)
        expect(nics[8]["name"] == "eno1" and nics[8]["kind"] == "eth" and nics[8]["numa"] == 0
               and nics[8]["switch"] is None, "management NIC")
        expect(node["gpu_nic_link"][0][4] == "SYS" and node["gpu_nic_link"][0][2] == "NODE",
               "links across switches and sockets")
    elif machine == "pcie4":
        expect(len(gpus) == 4 and len(nics) == 1, "4 GPUs, 1 NIC")
        expect([g["nic_link"] for g in gpus] == ["PIX", "PIX", "NODE", "NODE"], "pcie4 links")
        expect(all(g["nic_name"] == "mlx5_0" and g["numa"] == 0 for g in gpus), "pcie4 pairing")
        expect(nics[0]["ifname"] == "enp19s0", "pcie4 ifname")
    elif machine == "cpu2s":
        expect(len(gpus) == 0 and len(nics) == 1, "no GPU, 1 NIC")
        expect(nics[0]["name"] == "ens1f0" and nics[0]["numa"] == 1 and nics[0]["package"] == 1,
               "cpu2s NIC on socket 1")
        expect((node["packages"], node["numa_nodes"], node["pus"]) == (2, 2, 16), "cpu2s counts")
    else:
        sys.exit("tc_info_check: unknown machine " + machine)


if __name__ == "__main__":
    main()
