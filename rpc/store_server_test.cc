#include "rpc/store_server.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/channel.h"
#include "rpc/grpc_store.h"

namespace accel::rpc {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<GrpcStore> Client(int port, const std::string& token) {
  auto channel = MakeChannel(absl::StrCat("127.0.0.1:", port));
  EXPECT_TRUE(channel.ok()) << channel.status();
  return std::make_unique<GrpcStore>(*channel, token);
}

TEST(StoreServerTest, ServesTheKvCallsToGrpcStore) {
  auto server = StoreServer::Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  auto a = Client((*server)->port(), "");
  auto b = Client((*server)->port(), "");

  // A Get that starts before the Set sees the value.
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(50));
    EXPECT_TRUE(b->Set("k", std::string("v\0w", 3)).ok());
  });
  auto v = a->Get("k", absl::Seconds(20));
  setter.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, std::string("v\0w", 3));

  EXPECT_TRUE(a->Wait({"k"}, absl::Seconds(1)).ok());
  EXPECT_EQ(*a->Add("n", 2), 2);
  EXPECT_EQ(*b->Add("n", 3), 5);
  EXPECT_EQ(*Client((*server)->port(), "")->Get("n", absl::Seconds(1)), "5");  // a third client

  absl::Status s = a->Wait({"k", "missing"}, absl::Milliseconds(100));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("missing"));
  EXPECT_EQ(a->Get("absent", absl::Milliseconds(100)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(StoreServerTest, TokenIsCheckedWhenSet) {
  auto server = StoreServer::Start("127.0.0.1:0", "s3cret");
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(Client((*server)->port(), "wrong")->Set("k", "v").code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Client((*server)->port(), "")->Add("k", 1).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(Client((*server)->port(), "s3cret")->Set("k", "v").ok());
}

TEST(StoreServerTest, APortInUseIsAnErrorNamingIt) {
  auto first = StoreServer::Start("127.0.0.1:0");
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string address = absl::StrCat("127.0.0.1:", (*first)->port());
  auto second = StoreServer::Start(address);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr(address));
}

}  // namespace
}  // namespace accel::rpc
