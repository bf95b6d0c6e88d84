// Whole-log behaviour: ordering, look-alikes, exit-status rules, streaming.
#include <algorithm>
#include <csignal>

#include "classify/test_support.hpp"

namespace classify {
namespace {

using testing::classify_text;
using testing::exit_code;
using testing::killed_by;

const char k_training[] =
    "#gpualert# command: python train.py --name oom-test\n"
    "Epoch 1 step 10 | loss 2.3456\n"
    "Epoch 1 step 20 | loss 2.1234\n";

TEST(Ordering, OomOnOneRankThenTimeoutsEverywhere) {
  std::string log = k_training;
  log +=
      "[rank3]: Traceback (most recent call last):\n"
      "[rank3]:   File \"train.py\", line 80, in <module>\n"
      "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 "
      "has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n";
  for (int r : {0, 1, 2, 4, 5, 6, 7}) {
    log += "[rank" + std::to_string(r) +
           "]:[E1218 20:57:21.426415540 ProcessGroupNCCL.cpp:629] [Rank " + std::to_string(r) +
           "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, "
           "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800017 milliseconds before timing "
           "out.\n";
  }
  log += "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n";
  auto v = classify_text(log, killed_by(SIGABRT));
  EXPECT_EQ(v.label, "cuda_oom");
  EXPECT_EQ(v.rule, "cuda-oom");
  EXPECT_EQ(v.group, "gpu software");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_EQ(v.evidence[0].line, 6u);
  EXPECT_EQ(v.fields["requested"], "2.00 GiB");
  EXPECT_EQ(v.fields["gpu"], "3");
  EXPECT_EQ(v.fields["rank"], "3");
}

TEST(Ordering, XidThenUnknownErrorThenTimeouts) {
  std::string log = k_training;
  log +=
      "[rank1]:[E ProcessGroupNCCL.cpp:1484] Process group watchdog thread terminated with "
      "exception: CUDA error: unknown error\n"
      "[rank0]:[E ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=9) ran for 600081 milliseconds before timing out.\n";
  HostEvidence host;
  host.kernel_lines = {
      "[81234.567] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the "
      "bus.",
  };
  auto v = classify_text(log, killed_by(SIGABRT), host);
  EXPECT_EQ(v.label, "gpu_lost");
  EXPECT_EQ(v.rule, "gpu-fallen-off-bus");
  EXPECT_EQ(v.fields["xid"], "79");
  EXPECT_EQ(v.fields["pci"], "0000:3b:00");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_EQ(v.evidence[0].source, "kernel");

  // Without the kernel line the in-band unknown error still says gpu_lost.
  v = classify_text(log, killed_by(SIGABRT));
  EXPECT_EQ(v.label, "gpu_lost");
}

TEST(Ordering, UnknownErrorAtStartIsSetup) {
  auto v = classify_text(
      "Loading model\n  File \"torch/cuda/__init__.py\", line 247, in _lazy_init\n"
      "RuntimeError: CUDA error: unknown error\n",
      exit_code(1));
  EXPECT_EQ(v.label, "cuda_setup");
  // Without any sign of CUDA initialisation a bare unknown error is a lost GPU.
  v = classify_text("RuntimeError: CUDA error: unknown error\n", exit_code(1));
  EXPECT_EQ(v.label, "gpu_lost");
  v = classify_text(std::string(k_training) + "RuntimeError: CUDA error: unknown error\n",
                    exit_code(1));
  EXPECT_EQ(v.label, "gpu_lost");
}

TEST(Ordering, DeviceAssertBeforeItsIllegalAccessFollowUp) {
  auto v = classify_text(
      "Loss.cu:240: nll_loss_forward: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < "
      "n_classes` failed.\n"
      "RuntimeError: CUDA error: an illegal memory access was encountered\n",
      exit_code(1));
  EXPECT_EQ(v.label, "cuda_device_assert");
}

TEST(Ordering, NanBeforeTheTimeoutItCaused) {
  auto v = classify_text(
      "Exception: Current loss scale already at minimum - cannot decrease scale anymore.\n"
      "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1) ran for 600000 "
      "milliseconds before timing out.\n",
      killed_by(SIGABRT));
  EXPECT_EQ(v.label, "numerical_divergence");
}

TEST(Ordering, WatchdogAbortWithKnownWhatIsNotNativeCrash) {
  // "terminate called after throwing" is the C++ runtime's framing; the what() line
  // names the error, and decides when a rule explains it, whichever line came first.
  struct Case {
    const char* log;
    const char* label;
  };
  const Case cases[] = {
      {"terminate called after throwing an instance of 'c10::DistBackendError'\n"
       "  what():  [PG 0 Rank 2] Process group watchdog thread terminated with exception: CUDA "
       "error: an illegal memory access was encountered\n"
       "Aborted (core dumped)\n",
       "cuda_illegal_access"},
      {"terminate called after throwing an instance of 'std::logic_error'\n"
       "  what():  basic_string::_M_construct null not valid\n",
       "native_crash"},
      // Older PyTorch printed the abort before the timeout it was about.
      {"[E ProcessGroupNCCL.cpp:361] Some NCCL operations have failed or timed out.\n"
       "terminate called after throwing an instance of 'std::runtime_error'\n"
       "  what():  [Rank 2] Watchdog caught collective operation timeout: "
       "WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800909 milliseconds before "
       "timing out.\n",
       "comm_timeout"},
      {"terminate called after throwing an instance of 'std::runtime_error'\n"
       "  what():  NCCL Error 2: unhandled system error\n",
       "comm_error"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(classify_text(c.log, killed_by(SIGABRT)).label, c.label) << c.log;
  }
}

TEST(Ordering, NcclUnhandledCudaErrorReadsLastError) {
  auto v = classify_text(
      "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
      "cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3\n"
      "ncclUnhandledCudaError: Call to CUDA function failed.\n"
      "Last error:\n"
      "Cuda failure 'out of memory'\n",
      exit_code(1));
  EXPECT_EQ(v.label, "cuda_oom");
}

TEST(Ordering, ShmNotDiskFull) {
  auto v = classify_text(
      "RuntimeError: unable to write to file </torch_169035_1920244589_10>: No space left on "
      "device (28)\n",
      exit_code(1));
  EXPECT_EQ(v.label, "shm_exhausted");
  v = classify_text("OSError: [Errno 28] No space left on device: 'ckpt/model.pt'\n", exit_code(1));
  EXPECT_EQ(v.label, "disk_full");
}

TEST(Ordering, TimeLimitBannerBeforeTheStorm) {
  auto v = classify_text(
      "slurmstepd: error: *** JOB 123456 ON node12 CANCELLED AT 2024-05-01T12:00:03 DUE TO TIME "
      "LIMIT ***\n"
      "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4015698 got signal: "
      "15\n"
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by "
      "peer [10.0.0.42]:53121\n",
      killed_by(SIGTERM));
  EXPECT_EQ(v.label, "time_limit");
  EXPECT_EQ(v.fields["host"], "node12");
}

TEST(Ordering, HostOomKillOfAWorker) {
  HostEvidence host;
  host.kernel_lines = {"Out of memory: Killed process 4321 (pt_data_worker) total-vm:100kB"};
  auto v = classify_text("RuntimeError: DataLoader worker (pid(s) 4321) exited unexpectedly\n",
                         exit_code(1), host);
  EXPECT_EQ(v.label, "host_oom");
  EXPECT_EQ(v.fields["pid"], "4321");
  v = classify_text("RuntimeError: DataLoader worker (pid(s) 4321) exited unexpectedly\n",
                    exit_code(1));
  EXPECT_EQ(v.label, "unknown");
}

TEST(Ordering, ScriptErrorOnRankZeroThenPeersLoseTheStore) {
  auto v = classify_text(
      "[rank0]: Traceback (most recent call last):\n"
      "[rank0]: FileNotFoundError: [Errno 2] No such file or directory: 'data/train.bin'\n"
      "[rank1]: torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was "
      "likely closed.\n",
      exit_code(1));
  EXPECT_EQ(v.label, "script_error");
}

// ---- look-alikes

TEST(LookAlikes, BenignNoiseWithExitZeroIsSuccess) {
  const char* log =
      "node1:1:1 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open "
      "shared object file: No such file or directory : when loading libnccl-net.so\n"
      "node1:1:1 [0] NCCL WARN Could not find real path of /sys/class/net/veth0/device\n"
      "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768\n"
      "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0\n"
      "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
      "metrics: nan_count=0 val/nan_fraction=0.0\n"
      "Validation: 0 errors, 0 warnings\n"
      "Epoch 3 | loss 0.123\n";
  auto v = classify_text(log, exit_code(0));
  EXPECT_EQ(v.label, "success");
  EXPECT_EQ(v.rule, "success");
}

TEST(LookAlikes, OomCaughtByBatchSizeFinder) {
  std::string log =
      "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB\n"
      "Batch size 64 failed, trying batch size 32\n"
      "Finished batch size finder, will continue with full run using batch size 32\n"
      "Epoch 1 | loss 1.0\n";
  EXPECT_EQ(classify_text(log, exit_code(0)).label, "success");
  // The run then fails of something else: the caught OOM is not the cause.
  auto v = classify_text(log + "KeyError: 'labels'\n", exit_code(1));
  EXPECT_EQ(v.label, "script_error");
}

TEST(LookAlikes, TheWrapperHeaderIsNotEvidence) {
  auto v = classify_text(
      "#gpualert# job: cuda-out-of-memory-test (CUDA out of memory. Tried to allocate)\n"
      "hello\n",
      exit_code(3));
  EXPECT_EQ(v.label, "unknown");
}

TEST(LookAlikes, NanMetricInAFailingRun) {
  auto v = classify_text("val/nan_count: 0\nloss_nan_ratio: 0.0\nValueError: bad config\n",
                         exit_code(1));
  EXPECT_EQ(v.label, "script_error");
}

// ---- success can be overridden

TEST(Success, FatalGpuErrorOverridesExitZero) {
  HostEvidence host;
  host.kernel_lines = {"NVRM: Xid (PCI:0000:8a:00): 48, An uncorrectable double bit error (DBE)"};
  auto v = classify_text("Epoch 1 | loss 1.0\n", exit_code(0), host);
  EXPECT_EQ(v.label, "gpu_ecc");
  v = classify_text("RuntimeError: CUDA error: an illegal memory access was encountered\n",
                    exit_code(0));
  EXPECT_EQ(v.label, "cuda_illegal_access");
}

TEST(Success, StopOnANonFiniteLossOverridesExitZero) {
  // Keras' TerminateOnNaN and Lightning's EarlyStopping(check_finite=True) end training
  // on a NaN loss and the job exits 0: it stopped early, which is not a success.
  auto v = classify_text(
      "Epoch 2/30\n"
      "1883/3455 [====>.....] - ETA: 2:39:53 - loss: nan     Batch 1882: Invalid loss, "
      "terminating training\n",
      exit_code(0));
  EXPECT_EQ(v.label, "numerical_divergence");
  EXPECT_EQ(v.rule, "numerical-stop");
  v = classify_text(
      "Monitored metric val_loss = nan is not finite. Previous best value was 0.412. Signaling "
      "Trainer to stop.\n",
      exit_code(0));
  EXPECT_EQ(v.label, "numerical_divergence");
  // Stopping because the metric stopped improving is the ordinary end of a run.
  EXPECT_EQ(classify_text("Monitored metric val_loss did not improve in the last 3 records. "
                          "Best score: 0.412. Signaling Trainer to stop.\n",
                          exit_code(0))
                .label,
            "success");
}

TEST(Ordering, UnsupportedGpuWarningExplainsAFailureOnlyWhenNothingElseDoes) {
  const std::string warning =
      "NVIDIA RTX A6000 with CUDA capability sm_86 is not compatible with the current PyTorch "
      "installation.\n"
      "The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.\n";
  auto v = classify_text(warning + "Encoder parameters: 111218822\n", exit_code(1));
  EXPECT_EQ(v.label, "cuda_setup");
  EXPECT_EQ(v.rule, "cuda-arch-unsupported");
  // The job's own exception, when it printed one, is the more specific account.
  v = classify_text(warning + "Traceback (most recent call last):\nKeyError: 'input_ids'\n",
                    exit_code(1));
  EXPECT_EQ(v.label, "script_error");
  EXPECT_EQ(classify_text(warning, exit_code(0)).label, "success");
}

TEST(Ordering, NcclSystemCallFailureBeforeACutTraceback) {
  auto v = classify_text(
      "host:140:140 [0] misc/socket.cc:283 NCCL WARN Call to bind failed : Address already in "
      "use\n"
      "host:140:140 [0] NCCL INFO bootstrap.cc:91 -> 2\n"
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 49, in average_gradients\n"
      "    dist.all_reduce(param.grad.data, op=dist.reduce_op.SUM, group=dist_group)\n",
      exit_code(1));
  EXPECT_EQ(v.label, "comm_error");
  EXPECT_EQ(v.rule, "comm-error");
}

TEST(Success, ExitZeroWithTracebackIsStillSuccess) {
  EXPECT_EQ(
      classify_text("Traceback (most recent call last):\nValueError: x\n", exit_code(0)).label,
      "success");
}

// ---- the exit status and host facts alone

TEST(Status, SignalsWithoutEvidence) {
  EXPECT_EQ(classify_text("training...\n", killed_by(SIGSEGV)).label, "native_crash");
  EXPECT_EQ(classify_text("training...\n", killed_by(SIGABRT)).label, "native_crash");
  EXPECT_EQ(classify_text("training...\n", killed_by(SIGINT)).label, "cancelled");
  EXPECT_EQ(classify_text("training...\n", killed_by(SIGTERM)).label, "cancelled");
  EXPECT_EQ(classify_text("training...\n", killed_by(SIGHUP)).label, "cancelled");
  EXPECT_EQ(classify_text("training...\n", exit_code(143)).label, "cancelled");
  EXPECT_EQ(classify_text("training...\n", exit_code(2)).label, "unknown");
  EXPECT_EQ(classify_text("", exit_code(0)).label, "success");
  EXPECT_EQ(classify_text("training...\n", exit_code(124)).label, "cancelled");
}

TEST(Status, SigkillWithoutACauseDependsOnWhatCouldBeRead) {
  // Nothing on the host could be asked (a log classified on its own, or a run where
  // neither /dev/kmsg nor a memory cgroup was readable): the OOM killer is the
  // likeliest sender of a bare SIGKILL, and the verdict says it could not confirm it.
  auto v = classify_text("training...\nKilled\n", killed_by(SIGKILL));
  EXPECT_EQ(v.label, "host_oom");
  EXPECT_EQ(v.rule, "killed-likely-oom");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_EQ(v.evidence[0].source, "host");
  EXPECT_EQ(classify_text("training...\n", exit_code(137)).label, "host_oom");
  // The kernel log was read and holds no OOM kill: not the OOM killer.
  HostEvidence read;
  read.kernel_log_read = true;
  v = classify_text("training...\nKilled\n", killed_by(SIGKILL), read);
  EXPECT_EQ(v.label, "unknown");
  EXPECT_EQ(v.rule, "killed-without-a-cause");
  EXPECT_NE(v.action.find("kill -9"), std::string::npos);
  // Nor when the memory cgroup's counter was read and did not move.
  HostEvidence counted;
  counted.cgroup_oom_kills = 0;
  EXPECT_EQ(classify_text("training...\n", killed_by(SIGKILL), counted).label, "unknown");
  // A launcher saying that one of its workers died of SIGKILL is judged the same way.
  const std::string launcher = "  exitcode  : -9 (pid: 4321)\n";
  EXPECT_EQ(classify_text(launcher, exit_code(1)).rule, "worker-killed-likely-oom");
  EXPECT_NE(classify_text(launcher, exit_code(1), read).label, "host_oom");
  // A cause in the log still decides, whatever could be read.
  EXPECT_EQ(classify_text("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1) ran "
                          "for 600081 milliseconds before timing out.\n",
                          killed_by(SIGKILL))
                .label,
            "comm_timeout");
}

TEST(Status, HostFacts) {
  HostEvidence host;
  host.cgroup_oom_kills = 1;
  auto v = classify_text("training...\n", killed_by(SIGKILL), host);
  EXPECT_EQ(v.label, "host_oom");
  EXPECT_EQ(v.rule, "host-oom-cgroup");
  ExitInfo timeout = killed_by(SIGTERM);
  timeout.wrapper_timeout = true;
  v = classify_text("training...\nReceived SIGTERM, saving checkpoint\nConnection reset by peer\n",
                    timeout);
  EXPECT_EQ(v.label, "time_limit");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_EQ(v.evidence[0].source, "wrapper");
}

TEST(Status, SigbusWithAndWithoutLoaderWorkers) {
  EXPECT_EQ(classify_text("step 1\n", killed_by(SIGBUS)).label, "native_crash");
  EXPECT_EQ(classify_text("DataLoader worker (pid 12) started\n", killed_by(SIGBUS)).label,
            "shm_exhausted");
  EXPECT_EQ(classify_text("ERROR: Unexpected bus error encountered in worker. This might be "
                          "caused by insufficient shared memory (shm).\n",
                          killed_by(SIGBUS))
                .label,
            "shm_exhausted");
}

TEST(Status, ErrorLineWithoutTracebackIsScriptError) {
  EXPECT_EQ(
      classify_text("train.py: error: the following arguments are required: --data\n", exit_code(2))
          .label,
      "script_error");
  EXPECT_EQ(
      classify_text("srun: error: node12: task 0: Exited with exit code 1\n", exit_code(1)).label,
      "unknown");
}

// ---- streaming

std::string composite_log() {
  std::string log = "\x1b[32mstarting\x1b[0m\r\n";
  for (int i = 0; i < 300; ++i) {
    log += " " + std::to_string(i / 3) + "%|###| " + std::to_string(i) +
           "/1000 [00:10<01:28,  6.21it/s]\r";
  }
  log += "\nEpoch 1 | loss 1.2\n\xff\xfe invalid bytes\n";
  log +=
      "[rank2]: \x1b[31mtorch.OutOfMemoryError\x1b[0m: CUDA out of memory. Tried to allocate "
      "512.00 MiB\n";
  log += "[rank0]: Connection reset by peer\n";
  return log;
}

TEST(Streaming, SameVerdictWhateverTheChunking) {
  const std::string log = composite_log();
  auto whole = classify_text(log, exit_code(1));
  EXPECT_EQ(whole.label, "cuda_oom");
  ASSERT_FALSE(whole.evidence.empty());
  EXPECT_EQ(whole.evidence[0].line, 5u);
  EXPECT_EQ(whole.evidence[0].text.find("\x1b"), std::string::npos);
  for (size_t chunk : {1u, 2u, 3u, 5u, 17u, 4096u}) {
    Scanner scanner(testing::default_rules());
    for (size_t i = 0; i < log.size(); i += chunk) {
      scanner.feed(std::string_view(log).substr(i, chunk));
    }
    scanner.finish();
    auto v = scanner.verdict(exit_code(1), {});
    EXPECT_EQ(v.label, whole.label) << chunk;
    EXPECT_EQ(v.rule, whole.rule) << chunk;
    ASSERT_EQ(v.evidence.size(), whole.evidence.size()) << chunk;
    EXPECT_EQ(v.evidence[0].line, whole.evidence[0].line) << chunk;
    EXPECT_EQ(v.evidence[0].text, whole.evidence[0].text) << chunk;
    EXPECT_EQ(v.fields, whole.fields) << chunk;
    EXPECT_EQ(scanner.lines_seen(), 6u) << chunk;
  }
}

TEST(Streaming, HugeLineWithoutNewline) {
  // A 100 MB line (stand-in for 2 GB) fed in 1 MB chunks: the evidence at its start
  // is seen, the rest is skipped in bounded memory, and the next line still counts.
  Scanner scanner(testing::default_rules());
  scanner.feed("CUDA error: an illegal memory access was encountered ");
  std::string chunk(1 << 20, 'x');
  for (int i = 0; i < 100; ++i) {
    scanner.feed(chunk);
  }
  scanner.feed("\nKeyError: 'late'\n");
  scanner.finish();
  auto v = scanner.verdict(exit_code(1), {});
  EXPECT_EQ(v.label, "cuda_illegal_access");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_LE(v.evidence[0].text.size(), 1100u);
  EXPECT_EQ(scanner.lines_seen(), 2u);
}

TEST(Streaming, EvidenceIsBoundedPerRule) {
  std::string log;
  for (int i = 0; i < 10000; ++i) {
    log += "Loss.cu:1: k: block: [0,0,0], thread: [1,0,0] Assertion `x` failed.\n";
  }
  auto v = classify_text(log, exit_code(1));
  EXPECT_EQ(v.label, "cuda_device_assert");
  EXPECT_EQ(v.evidence.size(), 3u);
  EXPECT_EQ(v.evidence[2].line, 3u);
}

}  // namespace
}  // namespace classify

namespace classify {
namespace {

using testing::classify_text;
using testing::exit_code;
using testing::killed_by;

TEST(Streaming, ManyBlocksKeepLineNumbers) {
  // Several MiB: the scanner works in blocks of about 1 MiB, and evidence on either
  // side of a block boundary must keep its own line number.
  std::string log;
  uint64_t line = 0;
  while (log.size() < 3 * 1024 * 1024) {
    log += "step " + std::to_string(line) + " | loss 0.5 | lr 1e-4 | padding padding padding\n";
    ++line;
  }
  log += "RuntimeError: CUDA error: an illegal memory access was encountered\n";
  const uint64_t fault_line = line + 1;
  auto v = classify_text(log, exit_code(1));
  EXPECT_EQ(v.label, "cuda_illegal_access");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_EQ(v.evidence[0].line, fault_line);
  for (size_t chunk : {4093u, 65536u}) {
    Scanner scanner(testing::default_rules());
    for (size_t i = 0; i < log.size(); i += chunk) {
      scanner.feed(std::string_view(log).substr(i, chunk));
    }
    scanner.finish();
    auto w = scanner.verdict(exit_code(1), {});
    ASSERT_FALSE(w.evidence.empty());
    EXPECT_EQ(w.evidence[0].line, fault_line) << chunk;
  }
}

TEST(Streaming, NoMatchAcrossLineBreaks) {
  // "loss" on one line and ": nan" on the next is not a NaN loss.
  auto v = classify_text("val loss\n: nan\n", exit_code(1));
  EXPECT_NE(v.label, "numerical_divergence");
}

TEST(Ordering, GenericExceptionYieldsToASpecificRuleOnItsLine) {
  // The RuntimeError wraps a peer's report: weak evidence, and not a script error.
  auto v = classify_text(
      "RuntimeError: Rank 1 successfully reached monitoredBarrier, but received errors while "
      "waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.\n"
      "RuntimeError: [Rank 0]: Rank 3 failed to pass monitoredBarrier in 5000 ms\n",
      exit_code(1));
  EXPECT_EQ(v.label, "comm_timeout");
}

TEST(Ordering, PeerGoneIsWeakerThanThePeersOwnError) {
  auto v = classify_text(
      "[rank1]: RuntimeError: [gloo/transport/tcp/pair.cc:598] Connection closed by peer "
      "[10.0.0.1]:1234\n"
      "[rank0]: ValueError: bad shard index\n",
      exit_code(1));
  EXPECT_EQ(v.label, "script_error");
  v = classify_text("[rank1]: RuntimeError: Connection reset by peer\n", exit_code(1));
  EXPECT_EQ(v.label, "comm_error");
}

TEST(Ordering, SlurmCancelAfterATaskFailedIsNotACancellation) {
  auto v = classify_text(
      "KeyError: 'input_ids'\n"
      "srun: error: node1: task 0: Exited with exit code 1\n"
      "slurmstepd: error: *** STEP 20.0 ON node1 CANCELLED AT 2024-01-01T00:00:00 ***\n",
      exit_code(143));
  EXPECT_EQ(v.label, "script_error");
  v = classify_text(
      "step 10\nslurmstepd: error: *** JOB 20 ON node1 CANCELLED AT 2024-01-01T00:00:00 ***\n"
      "RuntimeError: Connection reset by peer\n",
      killed_by(SIGTERM));
  EXPECT_EQ(v.label, "cancelled");
}

TEST(Success, CrashReportedByAJobScriptThatWentOn) {
  auto v = classify_text("job.sh: line 3: 12318 Segmentation fault      ./preproc\ndone\n",
                         exit_code(0));
  EXPECT_EQ(v.label, "native_crash");
}

// skip(): the wrapper leaves out the middle of a backlog at the job's end.
size_t count_newlines(std::string_view text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// A log in three parts: progress bars redrawn with '\r' (a '\r' ends a segment but
// not a line, so line numbers count '\n' only), a script error in the middle, and
// an illegal memory access at the end.
struct ThreePartLog {
  std::string head, middle, tail;
};

ThreePartLog three_part_log() {
  ThreePartLog log;
  log.head = "#gpualert# command: python train.py\n";
  for (int i = 0; i < 50; ++i) {
    log.head += "step " + std::to_string(i) + "\r 10%\r 50%\r100%\n";
  }
  log.middle = "step 50 | loss 0.1\r\n";
  for (int i = 0; i < 200; ++i) {
    log.middle += "step " + std::to_string(i) + "\r progress\n";
  }
  log.middle += "KeyError: 'in the skipped part'\n";
  log.middle += "more\r\nmore\n";
  log.tail = "epoch 2\n\rRuntimeError: CUDA error: an illegal memory access was encountered\n";
  return log;
}

TEST(Skip, LineNumbersMatchAFullScan) {
  const ThreePartLog log = three_part_log();
  const std::string whole = log.head + log.middle + log.tail;
  Scanner full(testing::default_rules());
  full.feed(whole);
  full.finish();
  auto expected = full.verdict(exit_code(1), {});
  ASSERT_EQ(expected.label, "cuda_illegal_access");
  ASSERT_FALSE(expected.evidence.empty());
  // The fault is on the last line: one past the '\n' bytes before it.
  EXPECT_EQ(expected.evidence[0].line, count_newlines(whole));
  for (size_t chunk : {1u, 7u, 4096u}) {
    Scanner scanner(testing::default_rules());
    for (size_t i = 0; i < log.head.size(); i += chunk) {
      scanner.feed(std::string_view(log.head).substr(i, chunk));
    }
    scanner.skip(log.middle.size(), count_newlines(log.middle));
    for (size_t i = 0; i < log.tail.size(); i += chunk) {
      scanner.feed(std::string_view(log.tail).substr(i, chunk));
    }
    scanner.finish();
    auto v = scanner.verdict(exit_code(1), {});
    EXPECT_EQ(v.label, expected.label) << chunk;
    ASSERT_EQ(v.evidence.size(), expected.evidence.size()) << chunk;
    EXPECT_EQ(v.evidence[0].line, expected.evidence[0].line) << chunk;
    EXPECT_EQ(v.evidence[0].text, expected.evidence[0].text) << chunk;
    EXPECT_EQ(scanner.lines_seen(), full.lines_seen()) << chunk;
    EXPECT_EQ(scanner.skipped_bytes(), log.middle.size()) << chunk;
  }
  EXPECT_EQ(full.skipped_bytes(), 0u);
}

TEST(Skip, EvidenceInTheSkippedBytesIsAbsent) {
  const ThreePartLog log = three_part_log();
  auto ids_of = [](Scanner& scanner) {
    scanner.finish();
    return scanner.evidence_rules();
  };
  Scanner full(testing::default_rules());
  full.feed(log.head + log.middle + log.tail);
  Scanner skipping(testing::default_rules());
  skipping.feed(log.head);
  skipping.skip(log.middle.size(), count_newlines(log.middle));
  skipping.feed(log.tail);
  auto all = ids_of(full);
  auto read = ids_of(skipping);
  // The KeyError feeds some rule in the full scan and none once skipped; the rules
  // fed by the parts that were read are the same.
  Scanner middle_only(testing::default_rules());
  middle_only.feed("KeyError: 'in the skipped part'\n");
  auto from_middle = ids_of(middle_only);
  ASSERT_FALSE(from_middle.empty());
  for (const auto& id : from_middle) {
    EXPECT_NE(std::find(all.begin(), all.end(), id), all.end()) << id;
    EXPECT_EQ(std::find(read.begin(), read.end(), id), read.end()) << id;
  }
  EXPECT_EQ(skipping.verdict(exit_code(1), {}).label, "cuda_illegal_access");
}

TEST(Skip, EndsThePartialLineAtAChunkBoundary) {
  // The chunk that was read ends inside a line whose rest was skipped: what was read
  // of it is a segment of its own, and is not joined to the next data fed.
  Scanner scanner(testing::default_rules());
  scanner.feed("epoch 1\nRuntimeError: CUDA error: an illegal memory access was encountered");
  scanner.feed("\nworker: CUDA out of");
  scanner.skip(std::string_view(" memory (rest of the line)\nskipped\n").size(), 2);
  scanner.feed(" memory\nlast\n");
  scanner.finish();
  Scanner joined(testing::default_rules());
  joined.feed("worker: CUDA out of memory\n");
  joined.finish();
  ASSERT_FALSE(joined.evidence_rules().empty());
  const auto ids = scanner.evidence_rules();
  for (const auto& id : joined.evidence_rules()) {
    EXPECT_EQ(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
  }
  auto v = scanner.verdict(exit_code(1), {});
  EXPECT_EQ(v.label, "cuda_illegal_access");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_EQ(v.evidence[0].line, 2u);
  EXPECT_EQ(scanner.lines_seen(), 6u);

  // Evidence in the partial line itself is kept, with its own line number.
  Scanner partial(testing::default_rules());
  partial.feed("epoch 1\nepoch 2\nRuntimeError: CUDA error: an illegal memory access was encou");
  partial.feed("ntered, see above");
  partial.skip(std::string_view(" (rest)\n\rx\r\n").size(), 2);
  partial.feed("KeyError: 'late'\n");
  partial.finish();
  auto w = partial.verdict(exit_code(1), {});
  EXPECT_EQ(w.label, "cuda_illegal_access");
  ASSERT_FALSE(w.evidence.empty());
  EXPECT_EQ(w.evidence[0].line, 3u);
  EXPECT_EQ(partial.lines_seen(), 5u);  // the skipped "\rx\r" is one line
  EXPECT_EQ(partial.skipped_bytes(), 12u);
}

TEST(Skip, IntoTheLastLineKeepsItsNumber) {
  // The log ends in a line longer than the catch-up: the wrapper skips into it, and
  // what is read of its end is still matched, on that line's number.
  Scanner scanner(testing::default_rules());
  scanner.feed("step 1\nstep 2\n");
  scanner.skip(std::string_view("step 3\nstep 4\n").size() + 5000, 2);
  scanner.feed(std::string(3000, '.') +
               " RuntimeError: CUDA error: an illegal memory access was "
               "encountered");
  scanner.finish();
  auto v = scanner.verdict(exit_code(1), {});
  EXPECT_EQ(v.label, "cuda_illegal_access");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_EQ(v.evidence[0].line, 5u);
  EXPECT_EQ(scanner.lines_seen(), 5u);
}
}  // namespace
}  // namespace classify
