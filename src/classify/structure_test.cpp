// Structure that generalises beyond wordings: the cause inside a wrapper's report, the
// first failing process over the cascade, and one rule for the spellings of one failure.
#include <csignal>
#include <string>

#include "classify/test_support.hpp"

namespace classify {
namespace {

using testing::classify_text;
using testing::exit_code;
using testing::killed_by;

TEST(Wrappers, TheCauseInsideAnUncaughtCppExceptionDecides) {
  // what()'s message is read as if it stood alone: CUDA's bare "out of memory".
  auto v = classify_text(
      "terminate called after throwing an instance of 'std::runtime_error'\n"
      "  what():  out of memory\n"
      "Aborted (core dumped)\n",
      killed_by(SIGABRT));
  EXPECT_EQ(v.label, "cuda_oom");
  // A peer that reset the connection is weak evidence, yet it names the cause; the
  // exception's type (c10::DistNetworkError) does too.
  v = classify_text(
      "terminate called after throwing an instance of 'c10::DistBackendError'\n"
      "  what():  [2] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via "
      "c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer\n"
      "Aborted (core dumped)\n",
      killed_by(SIGABRT));
  EXPECT_EQ(v.label, "comm_error");
  v = classify_text(
      "terminate called after throwing an instance of 'c10::DistNetworkError'\n"
      "  what():  The client socket has failed to connect to any network address of (n1, 29500).\n"
      "Aborted (core dumped)\n",
      killed_by(SIGABRT));
  EXPECT_EQ(v.label, "comm_error");
  // Nothing explains what() or its type: the abort is the crash.
  v = classify_text(
      "terminate called after throwing an instance of 'MyLib::Oops'\n"
      "  what():  oops\n"
      "Aborted (core dumped)\n",
      killed_by(SIGABRT));
  EXPECT_EQ(v.label, "native_crash");
}

TEST(Wrappers, AnAbortFollowsTheErrorItAbortedOn) {
  // One rank's abort is printed before another rank's NCCL error: the abort is the
  // runtime's reaction, the NCCL error the cause.
  auto v = classify_text(
      "[rank1]: Fatal Python error: Aborted\n"
      "[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275, "
      "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.14.3\n",
      exit_code(1));
  EXPECT_EQ(v.label, "comm_error");
  v = classify_text(
      "rank 3: CUDA error at kernel.cu:120 code=2(cudaErrorMemoryAllocation)\n"
      "mpirun noticed that process rank 3 with PID 0 on node n2 exited on signal 6 (Aborted).\n",
      exit_code(134));
  EXPECT_EQ(v.label, "cuda_oom");
  v = classify_text("step 3\nAborted (core dumped)\n", killed_by(SIGABRT));
  EXPECT_EQ(v.label, "native_crash");
}

TEST(Cascade, TheFirstFailingProcessDecidesOverTheInterruptsOfItsSiblings) {
  auto v = classify_text(
      "[rank1]: ValueError: shapes do not match\n"
      "W1218 10:00:00.000000 1 torch/distributed/elastic/multiprocessing/api.py:897] Sending "
      "process 1235 closing signal SIGTERM\n"
      "[rank0]: KeyboardInterrupt\n",
      exit_code(1));
  EXPECT_EQ(v.label, "script_error");
  v = classify_text(
      "0: FileNotFoundError: [Errno 2] No such file or directory: 'train.json'\n"
      "srun: error: node12: task 0: Exited with exit code 1\n"
      "srun: Terminating StepId=1234.0\n"
      "1: KeyboardInterrupt\n",
      exit_code(1));
  EXPECT_EQ(v.label, "script_error");
  // A person's Ctrl-C (or the scheduler's SIGTERM) reached the launcher first: cancelled.
  v = classify_text(
      "W1218 10:00:00.000000 1 torch/distributed/elastic/agent/server/api.py:704] Received "
      "Signals.SIGTERM death signal, shutting down workers\n"
      "W1218 10:00:00.000000 1 torch/distributed/elastic/multiprocessing/api.py:897] Sending "
      "process 1235 closing signal SIGTERM\n"
      "[rank0]: KeyboardInterrupt\n",
      exit_code(1));
  EXPECT_EQ(v.label, "cancelled");
}

TEST(Synonyms, OtherVendorsAndSchedulersSayTheSameThing) {
  EXPECT_EQ(classify_text("RuntimeError: HIP error: out of memory\n", exit_code(1)).label,
            "cuda_oom");
  EXPECT_EQ(classify_text("RuntimeError: No HIP GPUs are available\n", exit_code(1)).label,
            "cuda_setup");
  EXPECT_EQ(classify_text(":0:rocdevice.cpp :2726: [pid:1 tid:0x7f] Callback: Queue 0x7f00 "
                          "aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The "
                          "agent attempted to access memory beyond the largest legal address. "
                          "code: 0x29\nAborted (core dumped)\n",
                          killed_by(SIGABRT))
                .label,
            "cuda_illegal_access");
  EXPECT_EQ(classify_text("epoch 3\n=>> PBS: job killed: walltime 86430 exceeded limit 86400\n",
                          killed_by(SIGKILL))
                .label,
            "time_limit");
  EXPECT_EQ(classify_text("TERM_CPULIMIT: job killed after reaching LSF CPU usage limit.\n",
                          exit_code(152))
                .label,
            "time_limit");
  EXPECT_EQ(classify_text("flux-job: job.exception type=timeout severity=0 resource allocation "
                          "expired\n",
                          exit_code(142))
                .label,
            "time_limit");
  EXPECT_EQ(classify_text("TERM_OWNER: job killed by owner.\n", exit_code(130)).label, "cancelled");
  EXPECT_EQ(classify_text("TERM_PREEMPT: job killed after preemption.\n", exit_code(143)).label,
            "preempted");
}

TEST(Synonyms, HipWordsADeviceSideAssertItsOwnWay) {
  // HIP's device __assert_fail line, then ROCr's abort for the trap it ends with.
  auto v = classify_text(
      "/pytorch/aten/src/ATen/native/hip/Indexing.hip:1292: indexSelectLargeIndex: Device-side "
      "assertion `srcIndex < srcSelectDimSize' failed.\n"
      ":0:rocdevice.cpp :2614: [pid:1 tid:0x7f] Callback: Queue 0x7f00 aborting with error : "
      "HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: "
      "0x1016\n"
      "Aborted (core dumped)\n",
      killed_by(SIGABRT));
  EXPECT_EQ(v.label, "cuda_device_assert");
  EXPECT_EQ(v.rule, "cuda-device-assert");
  // The trap's HSA status alone is any hardware exception, not an assert.
  v = classify_text(
      ":0:rocdevice.cpp :2614: [pid:1 tid:0x7f] Callback: Queue 0x7f00 aborting with error : "
      "HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: "
      "0x1016\n"
      "Aborted (core dumped)\n",
      killed_by(SIGABRT));
  EXPECT_EQ(v.label, "native_crash");
}

TEST(Synonyms, LaunchersReportAChildsSignalAsANegativeReturnCode) {
  const std::string deepspeed =
      "[2023-07-10 04:26:05,876] [INFO] [launch.py:318:sigkill_handler] Killing subprocess 94984\n"
      "[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['python', '-u', "
      "'train.py', '--local_rank=1'] exits with return code = ";
  // sys.exit(-11) leaves the launcher with status 245, no signal of its own.
  auto v = classify_text(deepspeed + "-11\n", exit_code(245));
  EXPECT_EQ(v.label, "native_crash");
  EXPECT_EQ(v.rule, "native-crash");
  v = classify_text(deepspeed + "-7\n", exit_code(249));
  EXPECT_EQ(v.label, "native_crash");
  v = classify_text(deepspeed + "-6\n", exit_code(250));
  EXPECT_EQ(v.label, "native_crash");
  EXPECT_EQ(v.rule, "native-abort");
  // An abort is the reaction to the error the rank printed before it.
  v = classify_text(
      "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n" +
          deepspeed + "-6\n",
      exit_code(250));
  EXPECT_EQ(v.label, "cuda_oom");
  // SIGKILL is evidence of a kill, not of its sender, as for torchrun's exitcode -9.
  v = classify_text(deepspeed + "-9\n", exit_code(247));
  EXPECT_EQ(v.label, "host_oom");
  HostEvidence read_and_silent;
  read_and_silent.kernel_log_read = true;
  read_and_silent.cgroup_oom_kills = 0;
  v = classify_text(deepspeed + "-9\n", exit_code(247), read_and_silent);
  EXPECT_EQ(v.label, "unknown");
  // A plain failure of the child is no signal.
  v = classify_text(deepspeed + "1\n", exit_code(1));
  EXPECT_NE(v.label, "native_crash");
  v = classify_text(
      "subprocess.CalledProcessError: Command '['python', 'train.py']' died with "
      "<Signals.SIGSEGV: 11>.\n",
      exit_code(1));
  EXPECT_EQ(v.label, "native_crash");
}

TEST(Synonyms, CloudProvidersReclaimingASpotVmIsPreemption) {
  // The VM is powered off after the notice: the job dies of SIGKILL, and without the
  // notice nothing but the OOM killer would be the likeliest sender.
  const std::string gcp =
      "epoch 3 step 1200 loss 2.31\n"
      "2024/12/17 16:03:58 GCP Metadata Service says termination is imminent\n"
      "Dec 17 16:04:09 worker-1 systemd-logind Power key pressed.\n";
  EXPECT_EQ(classify_text(gcp, killed_by(SIGKILL)).label, "preempted");
  HostEvidence read_and_silent;
  read_and_silent.kernel_log_read = true;
  EXPECT_EQ(classify_text(gcp, killed_by(SIGKILL), read_and_silent).label, "preempted");
  EXPECT_EQ(classify_text("2024/12/17 16:03:58 EC2 Metadata Service says termination is imminent\n",
                          killed_by(SIGTERM))
                .label,
            "preempted");
  EXPECT_EQ(classify_text("scheduled event: {\"EventId\": \"C1BF\", \"EventType\": \"Preempt\", "
                          "\"ResourceType\": \"VirtualMachine\"}\n",
                          killed_by(SIGKILL))
                .label,
            "preempted");
  // Azure's notice for any maintenance event is not a reclaim.
  EXPECT_EQ(classify_text("2024/12/17 16:03:58 Azure Metadata Service says a maintenance event is "
                          "imminent\n",
                          killed_by(SIGKILL))
                .label,
            "host_oom");
}

}  // namespace
}  // namespace classify
