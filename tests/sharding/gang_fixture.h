// The sharding tests' fixture: one kernel thread per rank (ranks are threads), a fresh
// directory per test holding the gang inputs (WriteGangInputs) for `config()`, removed after.
#pragma once

#include <unistd.h>

#include <string>

#include "engine/base/env.h"
#include "engine/kernels/threading.h"
#include "engine/model/model_config.h"
#include "gtest/gtest.h"
#include "tests/sharding/gang.h"

namespace accel::testing {

class GangTest : public ::testing::Test {
 protected:
  explicit GangTest(model::ModelConfig config) : config_(std::move(config)) {}
  void SetUp() override {
    kernels::SetNumThreads(1);
    dir_ = ::testing::TempDir() + "/gang_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(WriteGangInputs(dir_, config_).ok());
  }
  void TearDown() override { (void)Env::Default()->DeleteRecursively(dir_); }
  const model::ModelConfig& config() const { return config_; }

  const model::ModelConfig config_;
  std::string dir_;
};

}  // namespace accel::testing
