// acceld with --tls-cert / --tls-key: a client that trusts the certificate gets through, a
// plaintext client does not, and workers are pointed at the private plaintext unix socket.
// The certificate is made at test time with /usr/bin/openssl (skipped without it).
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "accel/v1/coordinator.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/channel.h"
#include "job/job_file.h"
#include "server/acceld.h"
#include "server/core/test_util.h"

namespace accel::server {
namespace {

using ::testing::HasSubstr;
namespace v1 = accel::v1;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

grpc::Status GetCluster(const std::shared_ptr<grpc::Channel>& channel, const std::string& token,
                        v1::Cluster* cluster) {
  grpc::ClientContext ctx;
  rpc::Authorize(ctx, token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return v1::Coordinator::NewStub(channel)->GetCluster(&ctx, v1::GetClusterRequest(), cluster);
}

TEST(AcceldTlsTest, ClientsNeedTheCaWorkersUseTheSocket) {
  if (access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/openssl";
  const std::string dir = FreshTestDir();
  const std::string cert = dir + "/cert.pem", key = dir + "/key.pem";
  const std::string cmd =
      "/usr/bin/openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " + key + " -out " + cert +
      " >" + dir + "/openssl.log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << ReadAll(dir + "/openssl.log");
  // A "worker" that records its environment and waits.
  const std::string worker = dir + "/w.sh";
  std::ofstream(worker) << "#!/bin/sh\nenv > " << dir << "/worker.env.tmp && mv " << dir
                        << "/worker.env.tmp " << dir << "/worker.env\nexec sleep 30\n";
  chmod(worker.c_str(), 0755);
  std::ofstream(dir + "/data.txt") << "hello\n";

  AcceldOptions o;
  o.listen = "127.0.0.1:0";
  o.state_dir = dir + "/state";
  o.cpu_slots = 1;
  o.worker_bin = worker;
  o.tls_cert = cert;
  o.tls_key = key;
  o.stop_grace = absl::Milliseconds(500);
  auto d = Acceld::Start(o);
  ASSERT_TRUE(d.ok()) << d.status();
  const std::string token = (*d)->client_token();

  absl::StatusOr<std::shared_ptr<grpc::Channel>> tls = rpc::MakeChannel((*d)->address(), cert);
  ASSERT_TRUE(tls.ok()) << tls.status();
  v1::Cluster cluster;
  grpc::Status s = GetCluster(*tls, token, &cluster);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(cluster.total_slots(), 1);

  absl::StatusOr<std::shared_ptr<grpc::Channel>> plain = rpc::MakeChannel((*d)->address());
  ASSERT_TRUE(plain.ok());
  s = GetCluster(*plain, token, &cluster);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();

  // Workers cannot speak TLS: they get the 0600 unix socket in the state directory.
  EXPECT_EQ((*d)->worker_address(), "unix:" + o.state_dir + "/acceld.sock");
  struct stat st;
  ASSERT_EQ(stat((o.state_dir + "/acceld.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0);
  v1::JobSpec spec = job::DefaultJobSpec();
  spec.mutable_data()->set_path(dir + "/data.txt");
  grpc::ClientContext ctx;
  rpc::Authorize(ctx, token);
  v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  v1::SubmitJobResponse resp;
  s = v1::Coordinator::NewStub(*tls)->SubmitJob(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  for (int i = 0; i < 500 && !std::filesystem::exists(dir + "/worker.env"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_THAT(ReadAll(dir + "/worker.env"),
              HasSubstr("ACCEL_COORDINATOR=" + (*d)->worker_address() + "\n"));
  // And the plaintext socket serves them.
  absl::StatusOr<std::shared_ptr<grpc::Channel>> local = rpc::MakeChannel((*d)->worker_address());
  ASSERT_TRUE(local.ok());
  s = GetCluster(*local, token, &cluster);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

// Issue 28: a text file as --tls-cert made acceld say "address in use?". Each PEM file is
// checked when it is read, before the state directory is touched; gRPC's own refusal of a PEM
// block that does not parse names the files too.
TEST(AcceldTlsTest, FilesThatAreNotPemAreRefusedNamingThem) {
  const std::string dir = FreshTestDir();
  const std::string text = dir + "/notes.txt", pem = dir + "/cert.pem", key = dir + "/key.pem";
  std::ofstream(text) << "not a certificate\n";
  std::ofstream(pem) << "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
  std::ofstream(key) << "-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n";
  AcceldOptions o;
  o.listen = "127.0.0.1:0";
  o.state_dir = dir + "/state";
  o.worker_bin = "/bin/true";  // no job runs
  o.tls_cert = text;
  o.tls_key = key;
  absl::Status s = Acceld::Start(o).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(s.message(), "--tls-cert " + text +
                             " holds no PEM certificate (no \"-----BEGIN CERTIFICATE-----\" line)");
  EXPECT_FALSE(std::filesystem::exists(o.state_dir));  // refused at the door
  o.tls_cert = pem;
  o.tls_key = text;
  s = Acceld::Start(o).status();
  EXPECT_EQ(s.message(), "--tls-key " + text +
                             " holds no PEM private key (no \"-----BEGIN ... PRIVATE KEY-----\" "
                             "line)");
  o.tls_key = "/dev/zero";
  EXPECT_EQ(Acceld::Start(o).status().message(),
            "--tls-key /dev/zero is a device, not a regular file");
  // Markers around bytes that are no certificate: gRPC refuses them when it listens.
  o.tls_key = key;
  s = Acceld::Start(o).status();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("or the certificate " + pem + " and key " + key + " could not be loaded"));
}

}  // namespace
}  // namespace accel::server
