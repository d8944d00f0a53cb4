#include "rpc/channel.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "rpc/credential_files.h"

namespace accel::rpc {
namespace {

// gRPC target schemes other than unix: whose syntax gRPC checks itself.
constexpr absl::string_view kUriSchemes[] = {"dns:", "ipv4:", "ipv6:", "unix-abstract:",
                                            "vsock:"};

absl::Status BadAddress(const std::string& address, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(address, ": ", why));
}

}  // namespace

std::string DefaultStateDir() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  if (xdg != nullptr && *xdg != '\0') return absl::StrCat(xdg, "/accel");
  const char* home = std::getenv("HOME");
  return absl::StrCat(home != nullptr ? home : ".", "/.local/state/accel");
}

std::string DefaultTokenFile() { return DefaultStateDir() + "/token"; }

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  absl::StatusOr<std::string> token = ReadToken(Env::Default(), path);
  if (absl::IsNotFound(token.status())) {
    return absl::NotFoundError(absl::StrCat(
        "cannot read token file ", path,
        ": it does not exist (acceld writes it on its first start; pass --token-file to use "
        "another)"));
  }
  return token;
}

absl::Status CheckServerAddress(const std::string& address) {
  constexpr absl::string_view kForm = "give host:port (e.g. 127.0.0.1:7070) or unix:/path";
  if (address.empty()) return BadAddress("''", absl::StrCat("empty; ", kForm));
  if (absl::StartsWith(address, "unix:")) {
    if (address.size() == 5) return BadAddress(address, "no socket path after unix:");
    return absl::OkStatus();
  }
  for (absl::string_view scheme : kUriSchemes) {
    if (absl::StartsWith(address, scheme)) return absl::OkStatus();
  }
  absl::string_view host, port;
  if (address.front() == '[') {  // [IPv6]:port
    const size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return BadAddress(address, absl::StrCat("an IPv6 address is [ADDR]:port; ", kForm));
    }
    host = absl::string_view(address).substr(1, close - 1);
    port = absl::string_view(address).substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) return BadAddress(address, absl::StrCat("no port; ", kForm));
    host = absl::string_view(address).substr(0, colon);
    port = absl::string_view(address).substr(colon + 1);
    if (absl::StrContains(host, ':')) {
      return BadAddress(address, "an IPv6 address goes in brackets, e.g. [::1]:7070");
    }
    for (const char ch : host) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' &&
          ch != '_') {
        return BadAddress(address, absl::StrCat("the host holds '", std::string(1, ch),
                                                "'; ", kForm));
      }
    }
  }
  if (host.empty()) return BadAddress(address, absl::StrCat("no host; ", kForm));
  int value = 0;
  const bool digits = !port.empty() && port.size() <= 5 &&
                      port.find_first_not_of("0123456789") == absl::string_view::npos;
  if (!digits || !absl::SimpleAtoi(port, &value) || value < 1 || value > 65535) {
    return BadAddress(address, absl::StrCat("port '", port, "' is not a number in 1..65535"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& address,
                                                           const std::string& tls_ca) {
  if (absl::Status s = CheckServerAddress(address); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("server address ", s.message()));
  }
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (!tls_ca.empty()) {
    absl::StatusOr<std::string> pem =
        ReadPemFile(Env::Default(), tls_ca, "CA file", PemKind::kCertificate);
    if (!pem.ok()) return pem.status();
    grpc::SslCredentialsOptions opts;
    opts.pem_root_certs = *std::move(pem);
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
