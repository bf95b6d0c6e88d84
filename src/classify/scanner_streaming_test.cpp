// Streaming behaviour of the scanner: the same verdict whatever the chunking, lines of any
// length, bounded evidence, and skip() over the middle of a backlog.
#include <algorithm>
#include <string_view>

#include "classify/test_support.hpp"

namespace classify {
namespace {

using testing::classify_text;
using testing::exit_code;

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
  // The rules fed are those of the parts that were read: the KeyError feeds rules in
  // the full scan that nothing read feeds once it is skipped.
  Scanner parts(testing::default_rules());
  parts.feed(log.head + log.tail);
  EXPECT_EQ(read, ids_of(parts));
  Scanner middle_only(testing::default_rules());
  middle_only.feed("KeyError: 'in the skipped part'\n");
  int only_in_middle = 0;
  for (const auto& id : ids_of(middle_only)) {
    if (std::find(read.begin(), read.end(), id) == read.end()) {
      EXPECT_NE(std::find(all.begin(), all.end(), id), all.end()) << id;
      ++only_in_middle;
    }
  }
  EXPECT_GT(only_in_middle, 0);
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
