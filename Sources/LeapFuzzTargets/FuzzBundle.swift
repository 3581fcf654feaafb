import LeapBundles
import LeapCore

/// LEAP bundle manifests: any bytes as manifest JSON. A manifest that parses has its files resolved against
/// a URL and a path as a loader would; every URL resolved against the URL stays an http(s) URL, and every
/// cache name made from it is one safe file name (no "/", no dot file).
package let fuzzBundle: FuzzTarget = (
    seeds: [
        Array(#"""
        {"schema_version": "1.0.0", "inference_type": "llama.cpp/lfm2-audio-v1",
         "load_time_parameters": {"model": "LFM2.5-Audio-1.5B-Q4_0.gguf",
            "multimodal_projector": "https://huggingface.co/LiquidAI/LFM2.5-Audio-1.5B-GGUF/resolve/main/mmproj-LFM2.5-Audio-1.5B-Q4_0.gguf",
            "audio_decoder": "./sub/../vocoder-LFM2.5-Audio-1.5B-Q4_0.gguf", "audio_tokenizer": "/abs/tokenizer.gguf"},
         "generation_time_parameters": {"sampling_parameters": {"temperature": 0.3, "top_p": 0.9, "min_p": 0.15,
            "repetition_penalty": 1.05, "top_k": 50}, "number_of_decoding_threads": 4}}
        """#.utf8),
        Array(#"{"load_time_parameters": {"model": {"url": "https://h/m.gguf?x=1#f", "sha256": "ABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABAB", "size": 12}, "chat_template": "{{ messages[0].content }}"}}"#.utf8),
        Array(#"{"inference_type": "llama.cpp/image-to-text", "load_time_parameters": {"model": "file:///m%20x.gguf", "chat_template": "../t.jinja"}, "generation_time_parameters": null}"#.utf8),
    ],
    run: { bytes in
        guard let manifest = try? BundleManifest.parse(bytes) else { return }
        let fromURL = BundleLocation.url("https://h.test/org/Model-GGUF/Q4_0.json")
        let fromPath = BundleLocation.path("models/Model-GGUF/Q4_0.json")
        for (key, file) in manifest.files {
            _ = try? fromPath.resolve(file.location)
            guard let resolved = try? fromURL.resolve(file.location) else { continue }
            guard case .url(let url) = resolved else {
                fuzzFailure("\(key) '\(file.location)' resolved to a local path against a URL manifest")
            }
            let scheme = url.prefix(8).lowercased()
            guard scheme.hasPrefix("http://") || scheme.hasPrefix("https://") else {
                fuzzFailure("\(key) '\(file.location)' resolved to '\(url)', not an http(s) URL")
            }
            let name = BundleCache.fileName(forURL: url)
            if name.isEmpty || name.contains("/") || name.hasPrefix(".") {
                fuzzFailure("unsafe cache file name '\(name)' for '\(url)'")
            }
        }
        for source in [fromURL, fromPath] {
            let folder = BundleCache.folderName(forManifest: source)
            if folder.isEmpty || folder.contains("/") || folder.hasPrefix(".") { fuzzFailure("unsafe cache folder '\(folder)'") }
        }
    }
)
