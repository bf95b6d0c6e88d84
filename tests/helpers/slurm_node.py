"""A private single-node Slurm (slurm-wlm 22.05 + munge) for tests and corpus cases.

SlurmNode(base, tracking).start() runs its own munged, slurmctld and slurmd: own ports
on 127.0.0.1's host name, own state/spool/log directories under `base`, a generated
slurm.conf that `env` (SLURM_CONF) points at; stop() cancels every job and stops
all three. No systemd. Two ways of tracking a job's processes, because Slurm signals
them differently (shared/reference/test-infrastructure.md):
- "linuxproc": proctrack/linuxproc, task/none, OverMemoryKill: what the Debian packages
  do on a plain machine;
- "cgroup": proctrack/cgroup, task/cgroup, jobacct_gather/cgroup, ConstrainRAMSpace (cgroup
  v1): how most production GPU clusters are configured. Only the step's task processes
  get scancel's and a time limit's signals; the rest of the step gets the final SIGKILL.
"""
import os
import shutil
import signal
import socket
import subprocess
import time

TRACKING = ("linuxproc", "cgroup")
# Job ids name cgroup folders: two test clusters on one host need different ranges.
FIRST_JOB_ID = {"linuxproc": 1000, "cgroup": 500000}


def free_port(base):
    """A TCP port at or above base that nothing listens on."""
    for port in range(base, base + 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port above %d" % base)


class SlurmNode:
    def __init__(self, base, tracking="linuxproc"):
        assert tracking in TRACKING
        self.tracking = tracking
        self.base = base
        self.conf = os.path.join(base, "slurm.conf")
        self.host = socket.gethostname().split(".")[0]
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self._munged = None

    def sh(self, cmd, **kw):
        return subprocess.run(cmd, env=kw.pop("env", self.env), capture_output=True, text=True,
                              **kw)

    @staticmethod
    def available(tracking="linuxproc"):
        if not all(shutil.which(p) for p in ("slurmctld", "slurmd", "sbatch", "munged", "runuser")):
            return False
        # cgroup tracking as configured here needs the v1 freezer and memory controllers.
        return tracking == "linuxproc" or all(
            os.path.isdir("/sys/fs/cgroup/" + c) and os.path.exists("/sys/fs/cgroup/%s/tasks" % c)
            for c in ("freezer", "memory", "cpuacct"))

    def _tracking_conf(self):
        if self.tracking == "linuxproc":
            return ("ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                    "JobAcctGatherType=jobacct_gather/linux\nJobAcctGatherParams=OverMemoryKill\n")
        # Slurm reads cgroup.conf from slurm.conf's directory, also through SLURM_CONF.
        with open(os.path.join(self.base, "cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\nCgroupAutomount=no\nConstrainCores=no\n"
                    "ConstrainDevices=no\nConstrainRAMSpace=yes\nConstrainSwapSpace=no\n"
                    "AllowedRAMSpace=100\n")
        return ("ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup\n"
                "JobAcctGatherType=jobacct_gather/cgroup\n")

    def cgroup_dirs(self):
        """Slurm's cgroup folders for this node, deepest first."""
        found = []
        for ctl in ("freezer", "memory", "cpuacct", "cpuset", "devices"):
            top = "/sys/fs/cgroup/%s/slurm_%s" % (ctl, self.host)
            for root, dirs, _ in os.walk(top, topdown=False):
                found.append(root)
        return found

    def start(self, def_mem_per_cpu=600):
        shutil.rmtree(self.base, ignore_errors=True)
        for d in ("state", "spool", "log", "munge"):
            os.makedirs(os.path.join(self.base, d))
        mdir = os.path.join(self.base, "munge")
        shutil.chown(mdir, "munge", "munge")
        os.chmod(mdir, 0o700)
        os.chmod(self.base, 0o755)
        key = "/etc/munge/munge.key"
        if not os.path.exists(key):
            os.makedirs("/etc/munge", exist_ok=True)
            with open(key, "wb") as f:
                f.write(os.urandom(128))
            shutil.chown(key, "munge", "munge")
            os.chmod(key, 0o400)
        sock = os.path.join(mdir, "munge.socket")
        r = subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged", "--force",
                            "--socket=" + sock, "--pid-file=" + os.path.join(mdir, "munged.pid"),
                            "--log-file=" + os.path.join(mdir, "munged.log"),
                            "--seed-file=" + os.path.join(mdir, "munged.seed"), "--key-file=" + key],
                           capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError("munged: " + r.stderr)
        with open(os.path.join(mdir, "munged.pid")) as f:
            self._munged = int(f.read())
        mem = 0
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = int(line.split()[1]) // 1024
        cport = free_port(16817)
        dport = free_port(cport + 1)
        base = self.base
        conf = f"""ClusterName=gpualert
SlurmctldHost={self.host}
SlurmctldPort={cport}
SlurmdPort={dport}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
{self._tracking_conf()}SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU={def_mem_per_cpu}
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={base}/log/jobcomp.txt
JobAcctGatherFrequency=task=1
KillWait=10
FirstJobId={FIRST_JOB_ID[self.tracking]}
OverTimeLimit=0
MinJobAge=600
MpiDefault=none
ReturnToService=2
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd.pid
SlurmctldLogFile={base}/log/slurmctld.log
SlurmdLogFile={base}/log/slurmd.log
NodeName={self.host} CPUs=24 Boards=1 SocketsPerBoard=1 CoresPerSocket=24 ThreadsPerCore=1 RealMemory={int(mem * 0.95)} State=UNKNOWN
PartitionName=debug Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
"""
        with open(self.conf, "w") as f:
            f.write(conf)
        r = self.sh(["/usr/sbin/slurmctld", "-c"])
        if r.returncode:
            raise RuntimeError("slurmctld: " + r.stderr)
        for _ in range(100):
            if "UP" in self.sh(["scontrol", "ping"]).stdout:
                break
            time.sleep(0.2)
        else:
            raise RuntimeError("slurmctld did not come up")
        r = self.sh(["/usr/sbin/slurmd"])
        if r.returncode:
            raise RuntimeError("slurmd: " + r.stderr)
        for _ in range(150):
            out = self.sh(["sinfo", "-h", "-o", "%T"]).stdout.strip()
            if out.startswith("idle"):
                return
            time.sleep(0.2)
        raise RuntimeError("node not idle: %s" % self.sh(["sinfo"]).stdout)

    def stop(self):
        self.sh(["scancel", "--full", "-u", "root"])
        time.sleep(0.5)
        for name in ("slurmd", "slurmctld"):
            pf = os.path.join(self.base, name + ".pid")
            try:
                with open(pf) as f:
                    pid = int(f.read())
                os.kill(pid, signal.SIGTERM)
                for _ in range(100):
                    os.kill(pid, 0)
                    time.sleep(0.1)
                os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass
        if self._munged:
            try:
                os.kill(self._munged, signal.SIGTERM)
            except OSError:
                pass
        time.sleep(0.3)
        if self.tracking == "cgroup":
            # A folder goes once no process is in it; a test's leftovers may take a moment.
            for _ in range(20):
                left = [d for d in self.cgroup_dirs() if not self._rmdir(d)]
                if not left:
                    break
                time.sleep(0.25)
        shutil.rmtree(self.base, ignore_errors=True)

    @staticmethod
    def _rmdir(path):
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            return False

    def job_state(self, jobid):
        """JobState and ExitCode (code:signal) from `scontrol show job`."""
        out = self.sh(["scontrol", "show", "job", str(jobid)]).stdout
        fields = dict(kv.split("=", 1) for kv in out.split() if "=" in kv)
        return fields.get("JobState"), fields.get("ExitCode")
