"""A private single-node Slurm (slurm-wlm 22.05 + munge) for tests and corpus cases.

SlurmNode(base).start() runs its own munged, slurmctld and slurmd: own ports on
127.0.0.1's host name, own state/spool/log directories under `base`, a generated
slurm.conf that `env` (SLURM_CONF) points at; stop() cancels every job and stops
all three. No systemd, no cgroups (proctrack/linuxproc): what the Debian packages
do on a plain machine, as root.
"""
import os
import shutil
import signal
import socket
import subprocess
import time


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
    def __init__(self, base):
        self.base = base
        self.conf = os.path.join(base, "slurm.conf")
        self.host = socket.gethostname().split(".")[0]
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self._munged = None

    def sh(self, cmd, **kw):
        return subprocess.run(cmd, env=kw.pop("env", self.env), capture_output=True, text=True,
                              **kw)

    @staticmethod
    def available():
        return all(shutil.which(p) for p in ("slurmctld", "slurmd", "sbatch", "munged", "runuser"))

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
        for line in open("/proc/meminfo"):
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
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU={def_mem_per_cpu}
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={base}/log/jobcomp.txt
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill
KillWait=5
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
        shutil.rmtree(self.base, ignore_errors=True)

    def job_state(self, jobid):
        """JobState and ExitCode (code:signal) from `scontrol show job`."""
        out = self.sh(["scontrol", "show", "job", str(jobid)]).stdout
        fields = dict(kv.split("=", 1) for kv in out.split() if "=" in kv)
        return fields.get("JobState"), fields.get("ExitCode")
