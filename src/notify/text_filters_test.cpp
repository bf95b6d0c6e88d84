#include "notify/text_filters.hpp"

#include <gtest/gtest.h>

namespace notify {
namespace {

TEST(TextFilters, CollapsesProgressBarRedrawsToTheLastOne) {
  EXPECT_EQ(collapse_redraws("  1%|#   |\r 50%|##  |\r100%|####|"), "100%|####|");
  EXPECT_EQ(collapse_redraws("windows line\r"), "windows line");
  EXPECT_EQ(collapse_redraws("done\r\r"), "done");
  EXPECT_EQ(collapse_redraws("last\r"), "last");
  EXPECT_EQ(collapse_redraws("plain"), "plain");
}

TEST(TextFilters, CleanLogLineCombinesTheFiltersAndDropsControls) {
  EXPECT_EQ(clean_log_line("\x1b[32m 10%\x1b[0m\r\x1b[32m100%\x1b[0m"), "100%");
  EXPECT_EQ(clean_log_line("bell\x07 back\x08space\ttab"), "bell backspace\ttab");
}

TEST(TextFilters, MasksObviousSecrets) {
  EXPECT_EQ(mask_secrets("HF_TOKEN=hf_abc123"), "HF_TOKEN=********");
  EXPECT_EQ(mask_secrets("export WANDB_API_KEY=0123456789abcdef"), "export WANDB_API_KEY=********");
  EXPECT_EQ(mask_secrets("password: hunter2"), "password: ********");
  EXPECT_EQ(mask_secrets("{\"api_key\": \"s3cr3t\", \"lr\": 0.1}"),
            "{\"api_key\": \"********\", \"lr\": 0.1}");
  EXPECT_EQ(mask_secrets("Authorization: Bearer abc.def.ghi"), "Authorization: Bearer ********");
  EXPECT_EQ(mask_secrets("curl -H 'Authorization: token ghx'"),
            "curl -H 'Authorization: token ********'");
  EXPECT_EQ(mask_secrets("python train.py --hf-token abcdef --lr 3e-4"),
            "python train.py --hf-token ******** --lr 3e-4");
  EXPECT_EQ(mask_secrets("git clone https://user:pa55@host/repo"),
            "git clone https://user:********@host/repo");
  EXPECT_EQ(mask_secrets("found ghp_0123456789abcdefghijABCDEFGHIJ in env"),
            "found ******** in env");
  EXPECT_EQ(mask_secrets("AWS AKIAABCDEFGHIJKLMNOP"), "AWS ********");
}

TEST(TextFilters, LeavesOrdinaryTrainingLinesAlone) {
  for (const char* line :
       {"max_tokens: 2048", "tokenizer: loaded", "num_tokens=512 tokens/s=1234.5",
        "step 10 loss 2.31 lr 3e-4", "Skipping key 'password' check"}) {
    EXPECT_EQ(mask_secrets(line), line);
  }
}

TEST(TextFilters, HtmlEscape) {
  EXPECT_EQ(html_escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
}

TEST(TextFilters, HeaderValuesLoseControlCharacters) {
  EXPECT_EQ(sanitize_header_value("job\r\nBcc: evil@x"), "job Bcc: evil@x");
  EXPECT_EQ(sanitize_header_value("a\n\n\tb\x1b[31m"), "a b [31m");
  EXPECT_EQ(sanitize_header_value("  padded  "), "padded");
  std::string cut = sanitize_header_value(std::string(50, 'x') + "\xC3\xA9\xC3\xA9", 52);
  EXPECT_EQ(cut, std::string(49, 'x') + "...");
  EXPECT_EQ(sanitize_header_value("\xC3\xA9\xC3\xA9\xC3\xA9", 5), "\xC3\xA9...");
}

TEST(TextFilters, Rfc2047LeavesAsciiAlone) {
  EXPECT_EQ(rfc2047_encode("[gpualert] FAILED cuda_oom: x"), "[gpualert] FAILED cuda_oom: x");
}

TEST(TextFilters, Rfc2047EncodesNonAsciiInWholeCharacterWords) {
  std::string enc = rfc2047_encode("mod\xC3\xA8le on n\xC5\x93ud");
  EXPECT_EQ(enc, "=?UTF-8?Q?mod=C3=A8le_on_n=C5=93ud?=");
  std::string longer = rfc2047_encode(
      "[gpualert] FAILED cuda_oom: "
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E-training-job-with-a-long-name on host");
  size_t start = 0;
  while (start < longer.size()) {
    size_t end = longer.find("\r\n ", start);
    std::string word =
        longer.substr(start, end == std::string::npos ? std::string::npos : end - start);
    EXPECT_LE(word.size(), 75u) << word;
    EXPECT_EQ(word.rfind("=?UTF-8?Q?", 0), 0u) << word;
    EXPECT_EQ(word.substr(word.size() - 2), "?=");
    // No word ends inside a UTF-8 sequence: the byte after the last =XX of a lead byte is in the
    // same word.
    EXPECT_EQ(word.find("=E6?="), std::string::npos);
    start = end == std::string::npos ? longer.size() : end + 3;
  }
  EXPECT_EQ(longer.find('\n', 0) == std::string::npos ? 0 : 1, 1);  // folded
}

TEST(TextFilters, Rfc2047EncodesTextThatLooksLikeAnEncodedWord) {
  EXPECT_EQ(rfc2047_encode("=?x?="), "=?UTF-8?Q?=3D=3Fx=3F=3D?=");
}

}  // namespace
}  // namespace notify
