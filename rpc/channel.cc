#include "rpc/channel.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"

namespace accel::rpc {

std::string DefaultStateDir() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  if (xdg != nullptr && *xdg != '\0') return absl::StrCat(xdg, "/accel");
  const char* home = std::getenv("HOME");
  return absl::StrCat(home != nullptr ? home : ".", "/.local/state/accel");
}

std::string DefaultTokenFile() { return DefaultStateDir() + "/token"; }

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(
        "cannot read token file ", path,
        " (acceld writes it on its first start; pass --token-file to use another)"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(ss.str()));
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat("token file ", path, " is empty"));
  if (token.size() > 4096) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token file ", path, " holds ", token.size(),
        " bytes; a token is at most 4096 (it travels in a gRPC header): is it the right file?"));
  }
  return token;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& address,
                                                           const std::string& tls_ca) {
  if (address.empty()) return absl::InvalidArgumentError("empty server address");
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (!tls_ca.empty()) {
    std::ifstream in(tls_ca);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read CA file ", tls_ca));
    std::stringstream ss;
    ss << in.rdbuf();
    grpc::SslCredentialsOptions opts;
    opts.pem_root_certs = ss.str();
    creds = grpc::SslCredentials(opts);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address, creds, args);
}

void Authorize(grpc::ClientContext& ctx, const std::string& token) {
  ctx.AddMetadata("authorization", absl::StrCat("Bearer ", token));
}

}  // namespace accel::rpc
