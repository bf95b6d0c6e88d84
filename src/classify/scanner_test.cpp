// Whole-log behaviour: ordering, look-alikes, overriding success, the exit status and host facts.
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

TEST(Ordering, PaddlesKernelCheckBeforeTheLaunchFailureItsTrapCauses) {
  auto v = classify_text(
      "Error: ../paddle/phi/kernels/funcs/scatter.cu.h:66 Assertion `scatter_i >= 0` failed. The "
      "index is out of bounds, but received [-1106957141]\n"
      "OSError: (External) CUDA error(719), unspecified launch failure.\n",
      exit_code(1));
  EXPECT_EQ(v.label, "cuda_device_assert");
}

TEST(Ordering, WindowsCommitLimitOnACudaDllIsMemoryNotSetup) {
  const std::string dll =
      " Error loading \"C:\\venv\\lib\\site-packages\\torch\\lib\\cudnn_adv_infer64_8.dll\" "
      "or one of its dependencies.\n";
  EXPECT_EQ(classify_text("OSError: [WinError 1455] The paging file is too small for this "
                          "operation to complete." +
                              dll,
                          exit_code(1))
                .label,
            "host_oom");
  EXPECT_EQ(classify_text("OSError: [WinError 126] The specified module could not be found." + dll,
                          exit_code(1))
                .label,
            "cuda_setup");
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

TEST(Ordering, NcclRefusedItsShmSegmentIsNotAFullDevShm) {
  // /dev/shm not writable: NCCL's shared-memory transport fails at its first
  // segment. Raising /dev/shm's size would not help; its mode would.
  auto v = classify_text(
      "node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission "
      "denied\n"
      "node08:27106:27302 [0] NCCL INFO include/shm.h:41 -> 2\n"
      "node08:27106:27302 [0] include/shm.h:48 NCCL WARN Error while creating shared memory "
      "segment nccl-shm-recv-b7948f403864987a-0-3-0 (size 4460544)\n"
      "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:290, unhandled system error\n",
      exit_code(1));
  EXPECT_EQ(v.label, "comm_error");
  EXPECT_EQ(v.rule, "nccl-shm-permission");
  // Without the permission error, the same segment failure is a full /dev/shm.
  v = classify_text(
      "node1:42:42 [0] NCCL WARN Error while creating shared memory segment "
      "/dev/shm/nccl-AbCdEf (size 9637888)\n",
      exit_code(1));
  EXPECT_EQ(v.label, "shm_exhausted");
}

TEST(Ordering, TheSchedulerSaysItWasTheTimeLimit) {
  // Slurm's banner went to its own output file; what `run` asked scontrol decides.
  HostEvidence host;
  host.scheduler_lines = {
      "scontrol: job 7 JobState=COMPLETING Reason=TimeLimit RunTime=12:00:03 TimeLimit=12:00:00"};
  auto v = classify_text("step 9000 loss 1.2\n", killed_by(SIGTERM), host);
  EXPECT_EQ(v.label, "time_limit");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_EQ(v.evidence.front().source, "scheduler");
  // scancel: the reason is not the time limit, and the SIGTERM says cancelled.
  host.scheduler_lines = {
      "scontrol: job 7 JobState=COMPLETING Reason=None RunTime=00:10:00 TimeLimit=12:00:00"};
  EXPECT_EQ(classify_text("step 9000 loss 1.2\n", killed_by(SIGTERM), host).label, "cancelled");
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

TEST(Success, XidFromNvmlIsHostEvidenceOfItsOwnSource) {
  HostEvidence host;
  host.gpu_lines = {"NVRM: Xid (PCI:0000:19:00): 79, reported by NVML for GPU-0000aaaa"};
  auto v = classify_text("step 10 | loss 2.0\n", exit_code(0), host);
  EXPECT_EQ(v.label, "gpu_lost");
  EXPECT_EQ(v.fields["pci"], "0000:19:00");
  bool from_gpu = false;
  for (const auto& e : v.evidence) {
    from_gpu = from_gpu || (e.source == "gpu" && e.text == host.gpu_lines[0]);
  }
  EXPECT_TRUE(from_gpu);
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

TEST(Success, ExitZeroWithATracebackTheJobWentOnFromIsStillSuccess) {
  // A traceback logged and survived (a caught exception, a retried download).
  EXPECT_EQ(classify_text("Traceback (most recent call last):\nValueError: x\nretrying\ndone\n",
                          exit_code(0))
                .label,
            "success");
  // Python's "ignored" exceptions (destructors, atexit handlers) leave the status as it is.
  EXPECT_EQ(
      classify_text("step 10 loss 0.5\nException ignored in: <function Pool.__del__ at 0x7f>\n"
                    "Traceback (most recent call last):\n"
                    "  File \"pool.py\", line 268, in __del__\n"
                    "AttributeError: 'NoneType' object has no attribute 'util'\n",
                    exit_code(0))
          .label,
      "success");
}

TEST(Success, ExitZeroIsNotBelievedWhenTheLogEndsInAnUncaughtException) {
  // A launcher that returned 0 although its workers died (the DeepSpeed launcher
  // did), or a job script whose last command hid the status: the output's last line
  // is the exception that ended a process.
  const std::string died =
      "[INFO] [launch.py:102:main] dist_world_size=2\n"
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 1, in <module>\n"
      "NameError: name 'garbage' is not defined\n"
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 1, in <module>\n"
      "NameError: name 'garbage' is not defined\n";
  auto v = classify_text(died, exit_code(0));
  EXPECT_EQ(v.label, "script_error");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_EQ(v.evidence.front().source, "exit");
  EXPECT_NE(v.evidence.front().text.find("exit status 0, not believed"), std::string::npos);
  // The specific rules decide as for any failed job.
  v = classify_text(
      "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
      "capacity of 79.10 GiB of which 1.06 GiB is free.\n",
      exit_code(0));
  EXPECT_EQ(v.label, "cuda_oom");
  // An exception line without a traceback before it is not a process dying of it.
  EXPECT_EQ(classify_text("step 1\nValueError: bad value in row 3, skipped\n", exit_code(0)).label,
            "success");
}

TEST(Success, ExitZeroIsNotBelievedWhenTheOutputEndsOnACause) {
  // A training script whose handler logged the error and returned normally.
  auto v = classify_text(
      "epoch 1 step 20 loss 0.71\n"
      "04/06/2025 19:27:09 - ERROR - root - Failed to execute the training process: "
      "CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ; expr=cublasCreate(&cublas_handle_)\n",
      exit_code(0));
  EXPECT_EQ(v.label, "cuda_oom");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_EQ(v.evidence.front().source, "exit");
  EXPECT_NE(v.evidence.front().text.find("last line of the job's output is a fatal error"),
            std::string::npos);
  // The same error earlier, and the run went on to the end: the status stands.
  EXPECT_EQ(classify_text("step 3: CUDA out of memory. Tried to allocate 2.00 GiB, skipping batch\n"
                          "step 4 loss 0.70\ntraining done\n",
                          exit_code(0))
                .label,
            "success");
  // A symptom-tier line last (a teardown message) is not enough.
  EXPECT_EQ(classify_text("training done\nNCCL WARN [Service thread] Connection closed by peer\n",
                          exit_code(0))
                .label,
            "success");
  // Nor a line that calls itself a warning: a CPU run whose last word was PyTorch's.
  EXPECT_EQ(
      classify_text("wrote predictions.csv\n"
                    "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:107: UserWarning: "
                    "CUDA initialization: Found no NVIDIA driver on your system. Please check "
                    "that you have an NVIDIA GPU and installed a driver\n",
                    exit_code(0))
          .label,
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

TEST(Status, AStalledJobIsACollectiveOnlyWhenTheLogSetOneUp) {
  ExitInfo stalled = killed_by(SIGTERM);
  stalled.stalled = true;
  // The same SIGTERM from --stall-action kill is not a cancellation: the job hung.
  auto plain = classify_text(k_training, stalled);
  EXPECT_EQ(plain.label, "unknown");
  EXPECT_EQ(plain.rule, "stalled");
  ASSERT_FALSE(plain.evidence.empty());
  EXPECT_NE(plain.evidence.front().text.find("stalled"), std::string::npos);
  EXPECT_EQ(plain.confidence.rfind("guess:", 0), 0u);
  auto nccl = classify_text(std::string(k_training) +
                                "node1:77:77 [0] NCCL INFO Channel 00/02 :    0   1\n"
                                "Epoch 1 step 30 | loss 2.0001\n",
                            stalled);
  EXPECT_EQ(nccl.label, "comm_timeout");
  EXPECT_EQ(nccl.rule, "stalled-collective");
  EXPECT_EQ(nccl.confidence.rfind("likely:", 0), 0u);
  // Without the stall the same SIGTERM is what it always was.
  EXPECT_EQ(classify_text(k_training, killed_by(SIGTERM)).label, "cancelled");
}

TEST(Status, ARayWorkersDeathDecidesOnlyWhatNothingElseExplains) {
  const std::string died =
      "(raylet) The actor is dead because its worker process has died. Worker exit type: "
      "SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code "
      "2. End of file.\n"
      "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n";
  auto v = classify_text(died, exit_code(1));
  EXPECT_EQ(v.label, "unknown");  // not the driver's RayActorError as a script's error
  EXPECT_EQ(v.rule, "ray-worker-died");
  // The signal that ended the whole job, and the worker's own error, still decide.
  EXPECT_EQ(classify_text(died, killed_by(SIGTERM)).label, "cancelled");
  EXPECT_EQ(classify_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
                          "GiB\n" +
                              died,
                          exit_code(1))
                .label,
            "cuda_oom");
  // exit_actor() is a normal end.
  EXPECT_EQ(classify_text("Worker exit type: INTENDED_USER_EXIT Worker exit detail: Worker exits "
                          "by a user request. exit_actor() is called.\n",
                          exit_code(0))
                .label,
            "success");
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

TEST(Status, ALoaderWorkerKilledIsJudgedAsABareSigkill) {
  // The loader says its worker died of SIGKILL, not who sent it: the same host facts
  // decide as for the job's own SIGKILL (issue: read host_oom with the kernel log read
  // and the cgroup counter at 0).
  const std::string log =
      std::string(k_training) +
      "Traceback (most recent call last):\n"
      "  File \"queue.py\", line 180, in get\n"
      "_queue.Empty\n"
      "RuntimeError: DataLoader worker (pid 4321) is killed by signal: Killed.\n"
      "The above exception was the direct cause of the following exception:\n"
      "RuntimeError: DataLoader worker (pid(s) 4321) exited unexpectedly\n";
  // Nothing on the host could be asked: the OOM killer is the likeliest sender.
  auto v = classify_text(log, exit_code(1));
  EXPECT_EQ(v.label, "host_oom");
  EXPECT_EQ(v.rule, "loader-worker-killed-likely-oom");
  EXPECT_NE(v.action.find("nothing here could confirm"), std::string::npos);
  // The kernel log was read, or the job's cgroup counter, and neither shows an OOM kill.
  HostEvidence read;
  read.kernel_log_read = true;
  HostEvidence counted;
  counted.cgroup_oom_kills = 0;
  for (const HostEvidence& host : {read, counted}) {
    v = classify_text(log, exit_code(1), host);
    EXPECT_EQ(v.label, "unknown");
    EXPECT_EQ(v.rule, "loader-worker-killed-without-a-cause");
    EXPECT_NE(v.action.find("kill -9"), std::string::npos);
    ASSERT_FALSE(v.evidence.empty());
    EXPECT_NE(v.evidence[0].text.find("killed by signal: Killed"), std::string::npos);
  }
  // Where the host shows the kill, it decides.
  HostEvidence kernel = read;
  kernel.kernel_lines = {"Memory cgroup out of memory: Killed process 4321 (pt_data_worker)"};
  EXPECT_EQ(classify_text(log, exit_code(1), kernel).label, "host_oom");
  HostEvidence oom_counted;
  oom_counted.cgroup_oom_kills = 1;
  EXPECT_EQ(classify_text(log, exit_code(1), oom_counted).rule, "host-oom-cgroup");
  // A launcher's report of a worker's SIGKILL, read with a host source, says where to look.
  v = classify_text("  exitcode  : -9 (pid: 4321)\n", exit_code(1), read);
  EXPECT_EQ(v.label, "unknown");
  EXPECT_EQ(v.rule, "worker-killed-without-a-cause");
  EXPECT_NE(v.action.find("kill -9"), std::string::npos);
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
}  // namespace
}  // namespace classify

namespace classify {
namespace {

using testing::classify_text;
using testing::exit_code;

TEST(Confidence, EachVerdictSaysHowSureItIsAndWhy) {
  auto oom = classify_text(
      "step 1\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
      exit_code(1));
  EXPECT_EQ(oom.confidence, "certain: the log shows the root cause (line 2)");
  auto none = classify_text("step 1\nstep 2\n", exit_code(3));
  EXPECT_EQ(none.label, "unknown");
  EXPECT_EQ(none.confidence,
            "guess: no rule matched; only the exit status 3 is known (the log's first "
            "error-looking line, if any, is shown)");
  auto ok = classify_text("step 1\ndone\n", exit_code(0));
  EXPECT_EQ(ok.confidence, "certain: exit 0, and nothing in the log contradicts it");
  model::HostEvidence host;
  host.scheduler_lines = {"scontrol: job 7 JobState=TIMEOUT Reason=TimeLimit"};
  auto tl = classify_text("step 1\n", exit_code(143), host);
  EXPECT_EQ(tl.label, "time_limit");
  EXPECT_EQ(tl.confidence, "certain: the scheduler's own word");
}

TEST(Caveats, ASuccessThatLoggedNanLossesSaysSo) {
  auto v = classify_text("{'loss': 1.2}\n{'loss': nan}\n{'loss': 0.9}\nTraining complete\n",
                         exit_code(0));
  EXPECT_EQ(v.label, "success");
  ASSERT_EQ(v.caveats.size(), 1u);
  EXPECT_EQ(v.caveats[0], "NaN/Inf losses were logged (line 2)");
  auto clean = classify_text("{'loss': 1.2}\nTraining complete\n", exit_code(0));
  EXPECT_TRUE(clean.caveats.empty());
  // A failed run's label says what it needs: no caveats there.
  auto failed = classify_text("{'loss': nan}\nKeyError: 'x'\n", exit_code(1));
  EXPECT_TRUE(failed.caveats.empty());
}

TEST(Unknown, StillPointsAtTheFirstErrorLookingLine) {
  auto v = classify_text(
      "step 1\nstep 2\nrank 3: connection refused by peer\nstep 3\nfailed again\n", exit_code(7));
  EXPECT_EQ(v.label, "unknown");
  ASSERT_EQ(v.evidence.size(), 2u);
  EXPECT_EQ(v.evidence[1].line, 3u);
  EXPECT_EQ(v.evidence[1].source, "log");
  EXPECT_EQ(v.fields["first_error_line"], "3");
  // A label that a rule explains is not given such a line.
  auto oom = classify_text("connection refused\nCUDA out of memory. Tried to allocate 2.00 GiB\n",
                           exit_code(1));
  EXPECT_FALSE(oom.fields.count("first_error_line"));
}

}  // namespace
}  // namespace classify
