// AudioEncoderNumerics: the arithmetic choice where liquid-audio and llama.cpp differ. liquid-audio (PyTorch)
// runs the whole encoder in float32; llama.cpp's graph runs the first subsampling convolution with
// ggml_conv_2d, whose im2col rounds the log-mel to F16 and whose product then rounds the conv.0 kernel to F16
// as well (everything else agrees: F16 / Q8_0 weights multiply activations rounded the same way in both).

/// The arithmetic of one encoder.
package struct AudioEncoderNumerics: Sendable, Equatable {
    /// conv.0 with the log-mel and its kernel rounded to F16 (llama.cpp), or in float (liquid-audio).
    package var firstConvolutionInF16: Bool

    package init(firstConvolutionInF16: Bool) {
        self.firstConvolutionInF16 = firstConvolutionInF16
    }

    /// llama.cpp mtmd's arithmetic (the default: generation then follows llama.cpp's more closely).
    package static let llamaCpp = AudioEncoderNumerics(firstConvolutionInF16: true)
    /// liquid-audio's LFM2AudioModel in float32.
    package static let liquidAudio = AudioEncoderNumerics(firstConvolutionInF16: false)
}
