#pragma once
// Certificates made by the tests themselves, with OpenSSL's C API (no
// openssl CLI, no process): a CA, certificates it signs (server, client,
// wrong host, expired) and self-signed ones, written as PEM files into a
// fresh temporary folder. Test code only.

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include "net/tls_options.h"

namespace gpucanary::net::test {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

// A key and a certificate for it.
struct TestCert {
  std::shared_ptr<EVP_PKEY> key;
  std::shared_ptr<X509> cert;

  std::string CertPem() const {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, cert.get());
    return Drain(bio);
  }
  std::string KeyPem() const {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    return Drain(bio);
  }

 private:
  static std::string Drain(BIO* bio) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);  // NOLINT(google-runtime-int)
    std::string out(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    return out;
  }
};

// Every field is named where one is made, as designated initializers
// without all members draw -Wmissing-field-initializers.
struct CertSpec {
  std::string common_name;
  std::string subject_alt_name;  // "DNS:localhost,IP:127.0.0.1"; "" for none
  long serial;                   // NOLINT(google-runtime-int)
  long not_before_s;             // NOLINT(google-runtime-int) seconds from now
  long not_after_s;              // NOLINT(google-runtime-int)
  bool ca;
};

// A certificate valid from an hour ago for a day.
inline CertSpec Spec(std::string common_name, std::string subject_alt_name, long serial,  // NOLINT
                     bool ca = false) {
  return {std::move(common_name), std::move(subject_alt_name), serial, -3600, 86400, ca};
}

// A P-256 key and a certificate for `spec`, signed by `issuer` (null:
// self-signed).
inline TestCert MakeCert(const CertSpec& spec, const TestCert* issuer = nullptr) {
  TestCert out;
  out.key.reset(EVP_EC_gen("P-256"), PkeyFree());
  out.cert.reset(X509_new(), X509Free());
  X509* x = out.cert.get();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), spec.serial);
  X509_gmtime_adj(X509_getm_notBefore(x), spec.not_before_s);
  X509_gmtime_adj(X509_getm_notAfter(x), spec.not_after_s);
  X509_set_pubkey(x, out.key.get());
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1,
                             -1, 0);
  X509* issuer_cert = issuer != nullptr ? issuer->cert.get() : x;
  X509_set_issuer_name(x, X509_get_subject_name(issuer_cert));
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer_cert, x, nullptr, nullptr, 0);
  const auto add = [&](int nid, const std::string& value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
  };
  add(NID_basic_constraints, spec.ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  add(NID_key_usage, spec.ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
  add(NID_subject_key_identifier, "hash");
  if (!spec.subject_alt_name.empty()) add(NID_subject_alt_name, spec.subject_alt_name);
  X509_sign(x, issuer != nullptr ? issuer->key.get() : out.key.get(), EVP_sha256());
  return out;
}

// A temporary folder, removed with its files when the object goes.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gc-tls-XXXXXX").string();
    path_ = mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

  // Writes `text` to `name` in the folder through a temporary file and a
  // rename, as a certificate manager replaces files; returns the path.
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string final_path = path_ + "/" + name;
    const std::string tmp = final_path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << text;
    }
    std::filesystem::rename(tmp, final_path);
    return final_path;
  }

 private:
  std::string path_;
};

// The usual cast of certificates, written as name.crt / name.key into a
// temporary folder: ca, server (127.0.0.1 and localhost, by ca), client (by
// ca), wrong_host (wrong.example, by ca), expired (by ca), self_signed
// (127.0.0.1 and localhost, by itself).
struct TestPki {
  TestPki() {
    ca = MakeCert(Spec("gpucanary test CA", "", 1, /*ca=*/true));
    Save("ca", ca);
    server = MakeCert(Spec("server", "DNS:localhost,IP:127.0.0.1", 2), &ca);
    Save("server", server);
    client = MakeCert(Spec("client", "", 3), &ca);
    Save("client", client);
    wrong_host = MakeCert(Spec("wrong", "DNS:wrong.example", 4), &ca);
    Save("wrong_host", wrong_host);
    expired = MakeCert({.common_name = "expired",
                        .subject_alt_name = "DNS:localhost,IP:127.0.0.1",
                        .serial = 5,
                        .not_before_s = -2 * 86400,
                        .not_after_s = -86400,
                        .ca = false},
                       &ca);
    Save("expired", expired);
    self_signed = MakeCert(Spec("self", "DNS:localhost,IP:127.0.0.1", 6));
    Save("self_signed", self_signed);
  }

  // TLS options for `name`'s files.
  TlsServerOptions Server(const std::string& name) const {
    TlsServerOptions o;
    o.cert_file = Crt(name);
    o.key_file = Key(name);
    return o;
  }
  TlsClientOptions Trusting(const std::string& ca_name = "ca") const {
    TlsClientOptions o;
    o.ca_file = Crt(ca_name);
    return o;
  }

  std::string Crt(const std::string& name) const { return dir.path() + "/" + name + ".crt"; }
  std::string Key(const std::string& name) const { return dir.path() + "/" + name + ".key"; }

  void Save(const std::string& name, const TestCert& c) const {
    dir.Write(name + ".crt", c.CertPem());
    dir.Write(name + ".key", c.KeyPem());
  }

  TempDir dir;
  TestCert ca, server, client, wrong_host, expired, self_signed;
};

}  // namespace gpucanary::net::test
