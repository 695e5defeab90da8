#include "config/tls_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpucanary::config {
namespace {

// A folder with ca.pem, c.pem and c.key (contents do not matter here: only
// that they can be read).
class TlsConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "gc-tlscfg-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    for (const char* name : {"ca.pem", "c.pem", "c.key"}) std::ofstream(dir_ + "/" + name) << "x";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Client(const std::string& yaml, net::TlsClientOptions* out = nullptr) const {
    auto r = ReadTlsClientConfig(Reporter("c.yaml"), YAML::Load(yaml)["tls_config"],
                                 "job.tls_config", dir_);
    if (!r) return r.error().message();
    if (out != nullptr) *out = *r;
    return "ok";
  }
  std::string Server(const std::string& yaml, net::TlsServerOptions* out = nullptr) const {
    auto r = ReadTlsServerConfig(Reporter("s.yaml"), YAML::Load(yaml)["tls_server_config"],
                                 "tls_server_config", dir_);
    if (!r) return r.error().message();
    if (out != nullptr) *out = *r;
    return "ok";
  }

  std::string dir_;
};

TEST_F(TlsConfigTest, ClientFieldsAsPrometheusSpellsThem) {
  net::TlsClientOptions o;
  ASSERT_EQ(Client("tls_config: {ca_file: ca.pem, cert_file: c.pem, key_file: " + dir_ +
                       "/c.key, server_name: dcgm.internal, insecure_skip_verify: true}",
                   &o),
            "ok");
  EXPECT_EQ(o.ca_file, dir_ + "/ca.pem");  // relative to the config's folder
  EXPECT_EQ(o.cert_file, dir_ + "/c.pem");
  EXPECT_EQ(o.key_file, dir_ + "/c.key");
  EXPECT_EQ(o.server_name, "dcgm.internal");
  EXPECT_TRUE(o.insecure_skip_verify);
  ASSERT_EQ(Client("tls_config: {}", &o), "ok");
  EXPECT_EQ(o, net::TlsClientOptions{});
}

TEST_F(TlsConfigTest, ClientErrorsNameFileLineAndField) {
  EXPECT_EQ(Client("tls_config:\n  ca_file: nope.pem\n"),
            "c.yaml:2:12: job.tls_config.ca_file: cannot read '" + dir_ +
                "/nope.pem': No such file or directory");
  EXPECT_EQ(Client("tls_config:\n  cert_file: c.pem\n"),
            "c.yaml:2:3: job.tls_config.key_file: required with cert_file");
  EXPECT_EQ(Client("tls_config:\n  key_file: c.key\n"),
            "c.yaml:2:3: job.tls_config.cert_file: required with key_file");
  EXPECT_EQ(Client("tls_config:\n  insecure_skip_verify: maybe\n"),
            "c.yaml:2:25: job.tls_config.insecure_skip_verify: expected true or false");
  EXPECT_EQ(Client("tls_config:\n  ca: inline\n"),
            "c.yaml:2:3: job.tls_config.ca: unknown field (expected one of ca_file, cert_file, "
            "key_file, server_name, insecure_skip_verify)");
  EXPECT_EQ(Client("tls_config: [ca.pem]\n"), "c.yaml:1:13: job.tls_config: expected a map");
}

TEST_F(TlsConfigTest, ServerFieldsAndClientAuth) {
  net::TlsServerOptions o;
  ASSERT_EQ(Server("tls_server_config: {cert_file: c.pem, key_file: c.key}", &o), "ok");
  EXPECT_EQ(o.cert_file, dir_ + "/c.pem");
  EXPECT_EQ(o.client_auth, net::ClientAuth::kNoClientCert);
  ASSERT_EQ(
      Server("tls_server_config: {cert_file: c.pem, key_file: c.key, client_ca_file: ca.pem}", &o),
      "ok");
  EXPECT_EQ(o.client_ca_file, dir_ + "/ca.pem");
  EXPECT_EQ(o.client_auth, net::ClientAuth::kRequireAndVerifyClientCert);
  ASSERT_EQ(Server("tls_server_config: {cert_file: c.pem, key_file: c.key, client_ca_file: ca.pem, "
                   "client_auth_type: VerifyClientCertIfGiven}",
                   &o),
            "ok");
  EXPECT_EQ(o.client_auth, net::ClientAuth::kVerifyClientCertIfGiven);
}

TEST_F(TlsConfigTest, ServerErrors) {
  EXPECT_EQ(Server("tls_server_config:\n  key_file: c.key\n"),
            "s.yaml:2:3: tls_server_config.cert_file: required");
  EXPECT_EQ(Server("tls_server_config:\n  cert_file: c.pem\n  key_file: k\n"),
            "s.yaml:3:13: tls_server_config.key_file: cannot read '" + dir_ +
                "/k': No such file or directory");
  EXPECT_EQ(Server("tls_server_config:\n  cert_file: c.pem\n  key_file: c.key\n"
                   "  client_auth_type: RequireAnyClientCert\n"),
            "s.yaml:4:21: tls_server_config.client_auth_type: 'RequireAnyClientCert' is not one "
            "of NoClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert");
  EXPECT_EQ(Server("tls_server_config:\n  cert_file: c.pem\n  key_file: c.key\n"
                   "  client_auth_type: RequireAndVerifyClientCert\n"),
            "s.yaml:4:21: tls_server_config.client_ca_file: required with "
            "RequireAndVerifyClientCert");
  EXPECT_EQ(Server("tls_server_config:\n  cert_file: c.pem\n  key_file: c.key\n"
                   "  client_ca_file: ca.pem\n  client_auth_type: NoClientCert\n"),
            "s.yaml:5:21: tls_server_config.client_auth_type: NoClientCert with a "
            "client_ca_file: the CAs would go unused");
}

}  // namespace
}  // namespace gpucanary::config
