// The trainers' test fixture: a temporary directory holding 18 KB of one repeated sentence
// (a loss that must fall fast) and TrainOptions for gpt2-tiny on it (B=4, T=32, 30 steps, lr
// 3e-3, clipping at 1).
#pragma once

#include <unistd.h>

#include <string>

#include "engine/base/env.h"
#include "engine/train/trainer.h"
#include "gtest/gtest.h"

namespace accel::train {

class RepetitiveTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/trainer_test_" + std::to_string(::getpid());
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
    std::string text;
    for (int i = 0; i < 400; ++i) text += "the quick brown fox jumps over the lazy dog. ";
    data_ = dir_ + "/text.txt";
    ASSERT_TRUE(WriteFileAtomic(Env::Default(), data_, text).ok());
  }
  void TearDown() override {
    if (!dir_.empty()) (void)Env::Default()->DeleteRecursively(dir_);
  }

  TrainOptions Options() {
    TrainOptions o;
    o.model = "gpt2-tiny";
    o.data = data_;
    o.batch = 4;
    o.seq = 32;
    o.steps = 30;
    o.schedule.base_lr = 3e-3f;
    o.grad_clip = 1.0f;
    return o;
  }
  std::string dir_, data_;
};

}  // namespace accel::train
