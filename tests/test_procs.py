"""triage/procs.py: the cores a worker pool may use (affinity, and the cgroup's CPU quota), and a
worker's signals.  The cgroup trees below are synthetic layouts of the kernel's files (cgroup v2's
`cpu.max`: "QUOTA PERIOD" or "max PERIOD"; v1's `cpu.cfs_quota_us` / `cpu.cfs_period_us`, -1 for none:
Documentation/admin-guide/cgroup-v2.rst and Documentation/scheduler/sched-bwc.rst of the Linux sources)."""
import os

import pytest

from triage import procs


def _tree(tmp_path, files, own):
    for rel, text in files.items():
        p = tmp_path / "sys" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (tmp_path / "self-cgroup").write_bytes(os.fsencode(own))
    return str(tmp_path / "sys"), str(tmp_path / "self-cgroup")


@pytest.mark.parametrize("files, own, quota", [
    # cgroup v2, the container's own cgroup at the namespace's root (a pod limited to 2 CPUs)
    ({"cgroup.controllers": "cpu io memory\n", "cpu.max": "200000 100000\n"}, "0::/\n", 2),
    ({"cgroup.controllers": "cpu\n", "cpu.max": "max 100000\n"}, "0::/\n", None),
    ({"cgroup.controllers": "cpu\n", "cpu.max": "150000 100000\n"}, "0::/\n", 2),       # 1.5 CPUs: 2
    ({"cgroup.controllers": "cpu\n", "cpu.max": "5000 100000\n"}, "0::/\n", 1),
    # v2 without a namespace: the job's cgroup and the ones above it; the smallest quota wins
    ({"cgroup.controllers": "cpu\n", "cpu.max": "max 100000\n",
      "slurm/cpu.max": "800000 100000\n", "slurm/job_7/cpu.max": "max 100000\n",
      "slurm/job_7/step_0/cpu.max": "400000 100000\n"}, "0::/slurm/job_7/step_0\n", 4),
    ({"cgroup.controllers": "cpu\n", "cpu.max": "max 100000\n",
      "slurm/cpu.max": "300000 100000\n"}, "0::/slurm/job_7\n", 3),
    # cgroup v1 (docker --cpus=3 on an older host)
    ({"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"},
     "4:cpu,cpuacct:/\n1:name=systemd:/\n", 3),
    ({"cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "50000\n", "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
      "cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"},
     "3:cpu,cpuacct:/docker/abc\n", 1),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, "2:cpu:/\n", None),
    # v1 without a namespace: the pod's quota, above the container's cgroup (kubelet on an older host)
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n",
      "cpu/kubepods/pod1/cpu.cfs_quota_us": "200000\n", "cpu/kubepods/pod1/cpu.cfs_period_us": "100000\n",
      "cpu/kubepods/pod1/ctr/cpu.cfs_quota_us": "-1\n", "cpu/kubepods/pod1/ctr/cpu.cfs_period_us": "100000\n"},
     "5:cpu:/kubepods/pod1/ctr\n", 2),
    # a cgroup whose name is not ASCII, and one with a space
    ({"cgroup.controllers": "cpu\n", "jobs/é/cpu.max": "200000 100000\n"}, "0::/jobs/é\n", 2),
    ({"cgroup.controllers": "cpu\n", "my job/cpu.max": "300000 100000\n"}, "0::/my job\n", 3),
    # what cannot be read is no quota
    ({"cgroup.controllers": "cpu\n", "cpu.max": "garbage\n"}, "0::/\n", None),
    ({"cgroup.controllers": "cpu\n", "cpu.max": "100000 0\n"}, "0::/\n", None),
    # a path deeper than any hierarchy: not walked
    ({"cgroup.controllers": "cpu\n", "cpu.max": "100000 100000\n"}, "0::" + "/a" * 65 + "\n", None),
    # outside the namespace's root: not this namespace's cgroup of that name
    ({"cgroup.controllers": "cpu\n", "other/cpu.max": "100000 100000\n"}, "0::/../other\n", None),
    ({}, "", None),
])
def test_the_cgroup_cpu_quota(tmp_path, files, own, quota):
    root, own_file = _tree(tmp_path, files, own)
    assert procs.cpu_quota(root, own_file) == quota


def test_no_proc_file_is_no_quota(tmp_path):
    assert procs.cpu_quota(str(tmp_path), str(tmp_path / "missing")) is None


def test_cores_are_the_affinity_at_most_the_quota(monkeypatch):
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no affinity here")
    n = len(os.sched_getaffinity(0))
    monkeypatch.setattr(procs, "cpu_quota", lambda: None)
    assert procs.cores() == n
    monkeypatch.setattr(procs, "cpu_quota", lambda: 1)
    assert procs.cores() == 1
    monkeypatch.setattr(procs, "cpu_quota", lambda: n + 100)
    assert procs.cores() == n


def test_a_container_limited_to_one_cpu_scans_a_big_input_in_one_process(monkeypatch, tmp_path):
    from triage.scan import pool
    big = tmp_path / "big.log"
    with open(big, "wb") as f:
        f.truncate(pool.POOL_MIN_BYTES)
    monkeypatch.delenv("TRIAGE_JOBS", raising=False)
    monkeypatch.setattr(procs, "cpu_quota", lambda: 1)
    assert pool._Pool.jobs([str(big)]) == 0
    monkeypatch.setattr(procs, "cpu_quota", lambda: 3)
    assert pool._Pool.jobs([str(big)]) == min(2, procs.cores() - 1)
    monkeypatch.setenv("TRIAGE_JOBS", "4")            # asked for: as asked
    assert pool._Pool.jobs([str(big)]) == 3
    assert pool._Pool.jobs([str(tmp_path / "missing")]) == 0


def _v1_cpu_mount():
    d = "/sys/fs/cgroup/cpu"
    ok = os.path.isfile(os.path.join(d, "cpu.cfs_quota_us")) and os.access(d, os.W_OK)
    return d if ok else None


@pytest.mark.skipif(_v1_cpu_mount() is None, reason="needs a writable cgroup v1 cpu hierarchy (root)")
def test_a_real_cgroup_quota_of_one_cpu_is_one_core(tmp_path):
    """The kernel's own files: a child cgroup with a quota of one CPU (100 ms per 100 ms), a process
    moved into it, which asks procs.cores() and how many workers a 32 MiB input would get."""
    import subprocess
    import sys
    big = tmp_path / "big.log"
    with open(big, "wb") as f:
        f.truncate(32 << 20)
    cg = os.path.join(_v1_cpu_mount(), f"triage-test-{os.getpid()}")
    os.mkdir(cg)
    try:
        with open(os.path.join(cg, "cpu.cfs_quota_us"), "w") as f:
            f.write("100000")
        code = ("import os, sys\n"
                f"open({os.path.join(cg, 'cgroup.procs')!r}, 'w').write(str(os.getpid()))\n"
                "from triage import procs\nfrom triage.scan import pool\n"
                "print(procs.cpu_quota(), procs.cores(), pool._Pool.jobs([sys.argv[1]]))")
        env = {k: v for k, v in os.environ.items() if k != "TRIAGE_JOBS"}
        out = subprocess.run([sys.executable, "-c", code, str(big)], capture_output=True, text=True,
                             env=env, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["1", "1", "0"]
    finally:
        os.rmdir(cg)
